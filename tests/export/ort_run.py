"""Runs an exported ONNX file with the runtimes nobody in detrain wrote (test helper).

usage: ort_run.py MODEL.onnx INPUTS.safetensors OUTPUTS.safetensors [TIMED_RUNS]

onnx.checker.check_model(full_check=True) must accept MODEL; onnxruntime (CPU) then runs it once
per tensor in INPUTS (each an `images` batch) and OUTPUTS gets the model's first output under
the same names, plus the model's metadata properties and its input/output dims in
__metadata__. With TIMED_RUNS, each batch then runs that many more times and the median
milliseconds per image go into __metadata__ as latency_ms. Exit 0 on success; any failure prints one line and exits 1.
"""
import json
import statistics
import struct
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort

DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    body = data[8 + n :]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        out[name] = np.frombuffer(body[start:end], DTYPES[info["dtype"]]).reshape(info["shape"])
    return out


def write_safetensors(path, tensors, metadata):
    header, offset, chunks = {"__metadata__": metadata}, 0, []
    for name, array in tensors.items():
        raw = np.ascontiguousarray(array, np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        chunks.append(raw)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))


def dims(value):
    return [d.dim_param or d.dim_value for d in value.type.tensor_type.shape.dim]


def main():
    model_path, inputs_path, outputs_path = sys.argv[1:4]
    timed_runs = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    model = onnx.load(model_path)
    onnx.checker.check_model(model, full_check=True)
    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    outputs, per_image = {}, []
    for name, images in read_safetensors(inputs_path).items():
        outputs[name] = session.run(None, {"images": images})[0]
        for _ in range(timed_runs):
            start = time.perf_counter()
            session.run(None, {"images": images})
            per_image.append((time.perf_counter() - start) * 1000 / images.shape[0])
    metadata = {p.key: p.value for p in model.metadata_props}
    if per_image:
        metadata["latency_ms"] = f"{statistics.median(per_image):.1f}"
    metadata["input_dims"] = json.dumps(dims(model.graph.input[0]))
    metadata["output_dims"] = json.dumps(dims(model.graph.output[0]))
    metadata["output_name"] = model.graph.output[0].name
    metadata["opset"] = str(model.opset_import[0].version)
    write_safetensors(outputs_path, outputs, metadata)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # one line for the C++ test's failure message
        print(f"ort_run.py: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        sys.exit(1)
