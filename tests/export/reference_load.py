"""Loads a detrain-exported safetensors file into the Python reference model (test helper).

usage: reference_load.py WEIGHTS.safetensors ARCH_YAML NC [KPT_K KPT_DIM]

Exit 0: strict load_state_dict by name had no missing or unexpected key and every shape
matched; 3: the reference (ultralytics) is not installed here; 1: anything else, one line.
"""
import sys

try:
    import torch
    from safetensors.torch import load_file
    from ultralytics.nn.tasks import DetectionModel, PoseModel
except ImportError as e:
    print(f"reference_load.py: reference not installed ({e})")
    sys.exit(3)


def main():
    weights, arch, nc = sys.argv[1], sys.argv[2], int(sys.argv[3])
    state = load_file(weights)
    if len(sys.argv) > 5:
        model = PoseModel(arch, nc=nc, data_kpt_shape=(int(sys.argv[4]), int(sys.argv[5])),
                          verbose=False)
    else:
        model = DetectionModel(arch, nc=nc, verbose=False)
    result = model.load_state_dict(state, strict=False)
    if result.missing_keys or result.unexpected_keys:
        print(f"missing {result.missing_keys[:5]} unexpected {result.unexpected_keys[:5]}")
        sys.exit(1)
    model.load_state_dict(state, strict=True)  # shapes too
    print(f"loaded {len(state)} tensors")


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except Exception as e:
        print(f"reference_load.py: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        sys.exit(1)
