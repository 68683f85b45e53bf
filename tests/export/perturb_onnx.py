"""Makes a deliberately changed copy of an exported ONNX file (test helper for the fp32 bar).

usage: perturb_onnx.py IN.onnx OUT.onnx MODE

MODE ulp: every convolution's float32 weights and biases move one ulp up or down (a seeded random
direction per element): the size of the rounding differences two correct runtimes may have, at
every layer at once (Resize scales and other constants are not weights and stay).
MODE drop-silu-first, drop-silu-middle, drop-silu-last: the first, middle or last SiLU of the
graph becomes the identity (its Mul(x, Sigmoid(x)) is replaced by x): one wrong operator. Exit 0 on success, 1 with one line.
"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def nudge_weights(model):
    rng = np.random.default_rng(0)
    conv_inputs = {x for n in model.graph.node if n.op_type == "Conv" for x in n.input[1:]}
    for init in model.graph.initializer:
        if init.data_type != onnx.TensorProto.FLOAT or init.name not in conv_inputs:
            continue
        w = numpy_helper.to_array(init)
        direction = np.where(rng.random(w.shape) < 0.5, -np.inf, np.inf).astype(np.float32)
        init.CopyFrom(numpy_helper.from_array(np.nextafter(w, direction).astype(np.float32), init.name))


def drop_silu(model, where):
    nodes = list(model.graph.node)
    sigmoid_of = {n.output[0]: n.input[0] for n in nodes if n.op_type == "Sigmoid"}
    silus = [i for i, n in enumerate(nodes)
             if n.op_type == "Mul" and len(n.input) == 2 and sigmoid_of.get(n.input[1]) == n.input[0]]
    if not silus:
        raise ValueError("no Mul(x, Sigmoid(x)) in the graph")
    i = silus[{"first": 0, "middle": len(silus) // 2, "last": len(silus) - 1}[where]]
    mul = nodes[i]
    nodes[i] = onnx.helper.make_node("Identity", [mul.input[0]], [mul.output[0]], name=mul.name)
    del model.graph.node[:]
    model.graph.node.extend(nodes)


def main():
    src, dst, mode = sys.argv[1:4]
    model = onnx.load(src)
    if mode == "ulp":
        nudge_weights(model)
    elif mode.startswith("drop-silu-"):
        drop_silu(model, mode[len("drop-silu-"):])
    else:
        raise ValueError(f"unknown mode {mode}")
    onnx.save(model, dst)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # one line for the C++ test's failure message
        print(f"perturb_onnx.py: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        sys.exit(1)
