"""param_groups.json: the optimizer groups Ultralytics 8.4.190's trainer builds for every model.

For each model (detect and pose, YOLOv8 / YOLO11 / YOLO26 at n) and each optimizer (SGD, MuSGD,
AdamW), BaseTrainer.build_optimizer is called on the model as the trainer builds it, and every
parameter is listed with the index, kind and lr multiplier of the group that holds it. The C++
test (tests/optim/test_param_groups.cpp) checks that detrain routes each parameter the same way,
including MuSGD's 3x lr on the head's cv3 / one2one_cv3.
"""

import json
import os
from types import SimpleNamespace

import common

FILES = ["param_groups.json"]

MODELS = {  # name -> (yaml, task, nc)
    "yolo26n": ("yolo26n.yaml", "detect", 80),
    "yolo26n-pose": ("yolo26n-pose.yaml", "pose", 1),
    "yolo11n": ("yolo11n.yaml", "detect", 80),
    "yolo11n-pose": ("yolo11n-pose.yaml", "pose", 1),
    "yolov8n": ("yolov8n.yaml", "detect", 80),
    "yolov8n-pose": ("yolov8n-pose.yaml", "pose", 1),
}
LR0, MOMENTUM, DECAY = 0.01, 0.937, 5e-4


def build(yaml, task, nc):
    import torch
    from ultralytics.nn.tasks import DetectionModel, PoseModel

    torch.manual_seed(0)
    if task == "pose":
        return PoseModel(yaml, ch=3, nc=nc, data_kpt_shape=(17, 3), verbose=False)
    return DetectionModel(yaml, ch=3, nc=nc, verbose=False)


def groups_of(model, name, nc):
    from ultralytics.engine.trainer import BaseTrainer

    # build_optimizer reads only args (auto rule) and data["nc"] from the trainer.
    fake = SimpleNamespace(args=SimpleNamespace(lr0=LR0, warmup_bias_lr=0.1, optimizer=name), data={"nc": nc})
    optimizer = BaseTrainer.build_optimizer(fake, model, name=name, lr=LR0, momentum=MOMENTUM, decay=DECAY)
    index = {id(p): (i, g) for i, g in enumerate(optimizer.param_groups) for p in g["params"]}
    rows = []
    for pname, p in model.named_parameters():
        if id(p) not in index:
            rows.append([pname, -1, "none", 0.0])
            continue
        i, g = index[id(p)]
        rows.append([pname, i, g.get("param_group", ""), g["lr"] / LR0])
    groups = [
        {"param_group": g.get("param_group", ""), "lr": g["lr"], "weight_decay": g.get("weight_decay", 0.0),
         "use_muon": bool(g.get("use_muon", False)), "params": len(g["params"])}
        for g in optimizer.param_groups
    ]
    return {"optimizer": type(optimizer).__name__, "groups": groups, "params": rows}


def generate(out_dir):
    result = {"__metadata__": common.provenance(lr0=str(LR0), momentum=str(MOMENTUM), decay=str(DECAY))}
    for model_name, (yaml, task, nc) in MODELS.items():
        model = build(yaml, task, nc)
        result[model_name] = {opt: groups_of(model, opt, nc) for opt in ("SGD", "MuSGD", "AdamW")}
    path = os.path.join(out_dir, "param_groups.json")
    with open(path + ".tmp", "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(path + ".tmp", path)
