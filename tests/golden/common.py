"""Shared pieces of the golden generators: the safetensors writer and the provenance stamp.

The generators run the pinned reference (Ultralytics 8.4.190, CPU, one torch thread) and write
data only: the C++ parity tests read these files as fixtures. Every file must come out byte for
byte the same on a given machine, so nothing here writes times, paths or host names.
"""

import json
import os
import struct

# The reference is imported lazily by each generator; these are set before torch starts threads.
os.environ.setdefault("YOLO_OFFLINE", "true")
os.environ.setdefault("YOLO_VERBOSE", "false")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

REFERENCE_VERSION = "8.4.190"

_DTYPES = {
    torch.float32: "F32",
    torch.float64: "F64",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.uint8: "U8",
    torch.bool: "BOOL",
    torch.bfloat16: "BF16",
    torch.float16: "F16",
}


def setup_torch():
    """One thread, no TF32, deterministic algorithms: the conditions the goldens promise."""
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


def provenance(**extra):
    """Metadata every file carries: which reference made it, on which torch, with how many threads."""
    import ultralytics

    if ultralytics.__version__ != REFERENCE_VERSION:
        raise SystemExit(
            f"golden generators need ultralytics=={REFERENCE_VERSION}, found {ultralytics.__version__}; "
            "run scripts/setup.sh (it makes .venv-ref)"
        )
    meta = {
        "reference": f"ultralytics {REFERENCE_VERSION}",
        "ultralytics_version": ultralytics.__version__,
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,
        "torch_num_threads": str(torch.get_num_threads()),
    }
    try:
        import cv2

        meta["opencv_version"] = cv2.__version__
    except ImportError:
        pass
    for key, value in extra.items():
        meta[key] = value if isinstance(value, str) else json.dumps(value)
    return meta


def as_tensor(value):
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().contiguous()
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    return torch.tensor(value)


def write_safetensors(path, tensors, metadata):
    """Writes `tensors` (an ordered mapping name -> tensor/array) in insertion order, then renames
    the finished file into place so a killed generator never leaves a half file behind."""
    header = {"__metadata__": {k: str(v) for k, v in metadata.items()}}
    blobs = []
    offset = 0
    for name, value in tensors.items():
        t = as_tensor(value)
        if t.dtype not in _DTYPES:
            raise TypeError(f"{name}: dtype {t.dtype} has no safetensors code here")
        raw = t.numpy().tobytes() if t.dtype != torch.bfloat16 else t.view(torch.int16).numpy().tobytes()
        header[name] = {"dtype": _DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)
    os.replace(tmp, path)


def shared_data_root():
    """coco-mini lives in DETRAIN_DATA or ../shared/data beside the project (the C++ tests' rule)."""
    env = os.environ.get("DETRAIN_DATA")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "..", "shared", "data"))
