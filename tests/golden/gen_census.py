"""census.json: parameter totals, GFLOPs and the MuSGD matrix census of every model family and
scale as Ultralytics 8.4.190 builds them.

Per (yaml, scale, nc): parameters, tensors (named_parameters), GFLOPs at 640 px (the reference's
get_flops), and over the trainable matrices (ndim >= 2; the trainer freezes every `.dfl`
parameter): their count, the frozen ones, distinct shapes, (group, shape) keys where the group
is MuSGD's 3x-lr set (the head's cv3 / one2one_cv3) or the rest, and the distinct
min(out, in) / max(out, in) sizes of the (out, in * kh * kw) views. tests/model/test_model_zoo.cpp
checks detrain's census of the same models against these numbers.
"""

import json
import os

import common

FILES = ["census.json"]

FAMILIES = {  # detrain yaml -> (reference yaml pattern, task, the nc values checked)
    "models/yolo26.yaml": ("yolo26{}.yaml", "detect", [80]),
    "models/yolo26-pose.yaml": ("yolo26{}-pose.yaml", "pose", [1, 80]),
    "models/yolo11.yaml": ("yolo11{}.yaml", "detect", [80]),
    "models/yolo11-pose.yaml": ("yolo11{}-pose.yaml", "pose", [1, 80]),
    "models/yolov8.yaml": ("yolov8{}.yaml", "detect", [80]),
    "models/yolov8-pose.yaml": ("yolov8{}-pose.yaml", "pose", [1, 80]),
}


def census(model):
    head = model.model[-1]
    boosted = {id(p) for m in (getattr(head, "cv3", None), getattr(head, "one2one_cv3", None)) if m for p in m.parameters()}
    tensors = matrices = frozen = 0
    shapes, keys, rows, cols = set(), set(), set(), set()
    for name, p in model.named_parameters():
        tensors += 1
        if p.ndim < 2:
            continue
        if ".dfl" in name:
            frozen += 1
            continue
        matrices += 1
        shape = tuple(p.shape)
        shapes.add(shape)
        keys.add((id(p) in boosted, shape))
        out, inner = p.shape[0], p.numel() // p.shape[0]
        rows.add(min(out, inner))
        cols.add(max(out, inner))
    return {
        "parameters": sum(p.numel() for p in model.parameters()),
        "tensors": tensors,
        "matrices": matrices,
        "frozen_matrices": frozen,
        "distinct_shapes": len(shapes),
        "keys": len(keys),
        "row_buckets": len(rows),
        "col_buckets": len(cols),
    }


def generate(out_dir):
    import torch
    from ultralytics.nn.tasks import DetectionModel, PoseModel
    from ultralytics.utils.torch_utils import get_flops

    rows = []
    for arch, (pattern, task, ncs) in FAMILIES.items():
        for nc in ncs:
            for scale in "nsmlx":
                torch.manual_seed(0)
                yaml = pattern.format(scale)
                if task == "pose":
                    model = PoseModel(yaml, ch=3, nc=nc, data_kpt_shape=(17, 3), verbose=False)
                else:
                    model = DetectionModel(yaml, ch=3, nc=nc, verbose=False)
                row = {"arch": arch, "scale": scale, "nc": nc, **census(model)}
                row["gflops"] = round(get_flops(model, 640), 1)
                rows.append(row)
    result = {"__metadata__": common.provenance(), "models": rows}
    path = os.path.join(out_dir, "census.json")
    with open(path + ".tmp", "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(path + ".tmp", path)
