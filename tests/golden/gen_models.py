"""<model>_weights / _forward / _loss .safetensors: model state, forward outputs, loss, assignment, gradients.

For yolo26n, yolo26n-pose, yolo11n, yolo11n-pose, yolov8n and yolov8n-pose the model is built the way
Ultralytics 8.4.190's DetectionTrainer / PoseTrainer build it (get_model, set_model_attributes, max_det through
set_head_attr, '.dfl' frozen), its BatchNorms are perturbed and calibrated on the fixed input, and then:
  1. the state_dict is written (weights file);
  2. an eval forward on a deepcopy, then one train-mode forward on the model itself (forward file);
  3. model.init_criterion() and model.loss(batch, preds) on those train preds with 7 fixed targets, the
     assigner's outputs (captured by a forward hook on the reference's own assigner), and per-parameter
     gradient norms in float64 (loss file).
The schema is the one of the 8.4.41 goldens (shared/golden/README.md sections 1-3); /work/notes/golden-models.md
lists what is new. Everything here only calls the reference; nothing of it is re-implemented.

The run ends with a replay: each model is rebuilt from a different seed, the weights file is loaded, and the
input, targets and every stored output are read back from the files and must be reproduced bit for bit.
"""

import copy
import json
import os
import struct

import numpy as np
import torch
from torch import nn

import common

MODELS = [  # name, model yaml, task, nc
    ("yolo26n", "yolo26n.yaml", "detect", 80),
    ("yolo26n-pose", "yolo26n-pose.yaml", "pose", 1),
    ("yolo11n", "yolo11n.yaml", "detect", 80),
    ("yolo11n-pose", "yolo11n-pose.yaml", "pose", 1),
    ("yolov8n", "yolov8n.yaml", "detect", 80),
    ("yolov8n-pose", "yolov8n-pose.yaml", "pose", 1),
]
FILES = [f"{name}_{kind}.safetensors" for name, *_ in MODELS for kind in ("weights", "forward", "loss")]

IMGSZ = 128
KPT_SHAPE = [17, 3]  # as a data yaml gives it (a list: v8PoseLoss tests kpt_shape == [17, 3] for the OKS sigmas)
INPUT_SEED, BN_SEED, BUILD_SEED, REPLAY_SEED = 2024, 1234, 0, 4321
TIE_MIN_OVERLAP = 4e-4  # every candidate anchor of every gt must have an overlap above this (README 8.3)
TIE_MIN_METRIC = 1e-30  # ... and an align metric that is a normal fp32 number with room to spare (OKS**6 underflows)
ZERO_GRAD_REL = 1e-13  # float64 replay: |grad| below this times the largest parameter grad counts as exactly zero

# The 7 targets of the 8.4.41 goldens (README section 3): every coordinate is k/512, written here as the integer k.
# They were drawn once with numpy default_rng(77) (hand-picked pixel boxes with jitter); the table is the result.
BATCH_IDX = [0, 0, 0, 0, 1, 1, 1]
DETECT_CLS = [14, 7, 72, 29, 16, 63, 58]
BOXES_K = [  # cx, cy, w, h
    (157, 186, 224, 288),
    (369, 352, 160, 208),
    (240, 256, 24, 20),  # the tiny box (6x5 px at 128), inside box 0: moved from 8.4.41's (170, 226), see below
    (403, 119, 120, 88),
    (259, 255, 400, 360),
    (111, 399, 96, 144),
    (415, 98, 72, 56),
]
KPTS_K = [  # per box 17 (x k, y k, visibility); v=0 rows are (0, 0, 0)
    [(80, 40, 2), (216, 253, 1), (83, 150, 2), (253, 240, 2), (0, 0, 0), (89, 144, 2), (134, 86, 1), (0, 0, 0),
     (71, 158, 2), (0, 0, 0), (74, 65, 1), (98, 267, 2), (218, 171, 1), (253, 110, 2), (73, 177, 2), (0, 0, 0),
     (78, 172, 2)],
    [(0, 0, 0), (425, 402, 1), (430, 350, 1), (317, 411, 1), (0, 0, 0), (421, 307, 2), (314, 265, 2),
     (359, 436, 2), (406, 405, 2), (406, 315, 2), (410, 415, 2), (0, 0, 0), (0, 0, 0), (424, 362, 1),
     (370, 346, 2), (374, 420, 1), (432, 408, 2)],
    [(0, 0, 0), (166, 219, 1), (178, 225, 2), (0, 0, 0), (164, 224, 1), (181, 225, 1), (0, 0, 0), (169, 223, 1),
     (0, 0, 0), (161, 230, 2), (177, 229, 2), (0, 0, 0), (0, 0, 0), (0, 0, 0), (163, 220, 2), (160, 234, 1),
     (173, 231, 2)],
    [(363, 143, 2), (405, 101, 2), (366, 158, 2), (437, 132, 1), (423, 83, 2), (0, 0, 0), (414, 96, 2),
     (442, 142, 2), (0, 0, 0), (391, 143, 2), (416, 124, 2), (406, 125, 2), (352, 147, 2), (428, 150, 2),
     (425, 123, 1), (374, 150, 1), (0, 0, 0)],
    [(433, 248, 2), (0, 0, 0), (298, 226, 2), (379, 335, 2), (0, 0, 0), (188, 388, 2), (329, 225, 1),
     (352, 348, 2), (291, 248, 2), (372, 111, 2), (144, 220, 1), (225, 199, 1), (180, 322, 2), (156, 256, 1),
     (135, 399, 2), (0, 0, 0), (355, 395, 2)],
    [(118, 367, 2), (129, 349, 2), (117, 448, 2), (0, 0, 0), (142, 459, 1), (0, 0, 0), (76, 376, 2),
     (122, 348, 2), (96, 335, 2), (111, 388, 1), (69, 399, 1), (138, 345, 2), (0, 0, 0), (104, 389, 1),
     (132, 432, 1), (109, 430, 2), (77, 336, 2)],
    [(395, 76, 2), (447, 80, 2), (389, 77, 2), (429, 119, 1), (0, 0, 0), (403, 86, 1), (0, 0, 0), (447, 77, 2),
     (436, 74, 2), (412, 88, 1), (384, 91, 1), (417, 85, 1), (0, 0, 0), (406, 87, 2), (445, 115, 2),
     (388, 76, 1), (410, 99, 2)],
]
TINY = (0, 2)  # (image, row within the image) of the tiny box
# Under 8.4.190 the 8.4.41 position (170, 226) leaves a candidate anchor of the tiny box with CIoU 2.5e-4 (yolo11n,
# yolo11n-pose) and 1.8e-4 (yolov8n, yolov8n-pose), below the 4e-4 margin. Of the 54069 k/512 centres that keep the
# box inside box 0, 25 pass the margin in all six models (every candidate of the tiny box, every branch); (240, 256)
# has the widest margin among those whose tiny box gets a foreground anchor in every model (min CIoU 1.17e-3). Its
# two candidates, stride-8 anchors (60, 60) and (60, 68) px, both lie outside the real 57..63 x 61.5..66.5 px box, so
# only the small-target enlargement (to 16 px) makes them candidates; the anchors at x = 52 and 68 px sit exactly on
# the enlarged box's edges and are excluded by the strict "> eps" test (exact in binary).
# 8.4.190's PoseTaskAlignedAssigner (yolo26n-pose) scores anchors by keypoint OKS with area = 0.53 * w * h: for the
# 6x5 px tiny box that is ~1e-4 .. 1e-12, and OKS**6 underflows fp32, so its topk becomes a tie-break lottery. The
# tiny box's keypoints are therefore all unlabelled (v=0) in every pose file: the assigner then falls back to CIoU for
# it (the vis.any() branch), which passes the tie check. The other six boxes keep the 8.4.41 keypoints.
HIDDEN_KPTS_BOX = 2

ORDER_FORWARD = (
    "1) weights file state; 2) eval forward on a deepcopy in model.eval() under no_grad (end2end models: first "
    "with head.end2end = True, i.e. nms=False, for eval.output / eval.decoded_one2one / eval.topk_anchor_index, then "
    "with head.end2end = False, 8.4.190's default nms=None path, for eval.one2many_output); 3) model.train() forward "
    "on the original (running stats updated once) -> train.* outputs; the loss file uses exactly these train.* outputs"
)
ORDER_LOSS = (
    "train-mode forward (see forward file) -> crit = model.init_criterion(); model.criterion = crit -> loss, items = "
    "model.loss(batch, preds) -> total = loss.sum() -> total.backward() (grads were None before)"
)
GRAD_DOC = (
    "grad.l2norm / grad.sum / grad.abs_sum (L1): F64 (accumulated in float64 from the fp32 grads), per parameter in "
    "named_parameters() order (= state_dict order restricted to parameters); -1 / 0 / -1 where grad is None (frozen)"
)
BN_DOC = (
    "torch.Generator seed 1234: every BatchNorm2d in modules() order: weight=U(0.75,1.25), bias=U(-0.1,0.1) (drawn "
    "per layer: weight then bias, as rand*0.5+0.75 and rand*0.2-0.1); then running stats := batch statistics "
    "(momentum=None, i.e. mean and unbiased var) of one train-mode pass on the golden input itself; then per layer "
    "running_mean += U(-0.02,0.02)*sqrt(running_var), running_var *= U(0.95,1.05) (same generator, mean draw then "
    "var draw); momentum back to 0.03; num_batches_tracked reset to 0. (Uncalibrated random stats make the eval "
    "output of a random-init net either input-independent or saturated: see README)"
)
ZERO_REASONS = [  # (name suffix, why a later train-mode BN cancels the per-channel shift this BN bias adds)
    (".attn.pe.bn.bias", "Attention.pe is Conv(act=False); its output is summed into proj's input, a linear conv "
                         "followed by train-mode BN (proj.bn)"),
    (".attn.proj.bn.bias", "Attention.proj is Conv(act=False); its output is added to the residual stream, which "
                           "reaches only linear convs followed by train-mode BNs (ffn.0 and the block's cv2)"),
    (".ffn.1.bn.bias", "PSABlock.ffn[1] is Conv(act=False); its output is added to the residual stream, which reaches "
                       "only the enclosing block's cv2 (linear conv + train-mode BN)"),
    (".9.cv1.bn.bias", "SPPF.cv1 is Conv(act=False) (YOLO26's 4-arg SPPF row); max-pooling commutes with a per-channel "
                     "shift and cv2 is a linear conv followed by train-mode BN"),
]


# ---------------------------------------------------------------------------------------------------------------------
# inputs


def golden_input():
    return torch.rand(2, 3, IMGSZ, IMGSZ, generator=torch.Generator().manual_seed(INPUT_SEED))


def golden_targets(task):
    targets = {
        "batch_idx": torch.tensor(BATCH_IDX, dtype=torch.float32),
        "cls": torch.tensor(DETECT_CLS if task == "detect" else [0] * len(BATCH_IDX), dtype=torch.float32)[:, None],
        "bboxes": torch.tensor(BOXES_K, dtype=torch.float32) / 512,
    }
    if task == "pose":
        k = torch.tensor(KPTS_K, dtype=torch.float32)
        k[HIDDEN_KPTS_BOX] = 0
        targets["keypoints"] = torch.cat((k[..., :2] / 512, k[..., 2:]), -1)
    return targets


# ---------------------------------------------------------------------------------------------------------------------
# model


def trainer_args(task):
    """The trainer's self.args: default.yaml of 8.4.190 with the task and the golden image size."""
    from ultralytics.cfg import get_cfg
    from ultralytics.utils import DEFAULT_CFG

    return get_cfg(DEFAULT_CFG, {"task": task, "imgsz": IMGSZ})


def build(cfg, task, nc, seed=BUILD_SEED):
    """As DetectionTrainer/PoseTrainer: get_model, then set_model_attributes, set_head_attr(max_det), freeze '.dfl'."""
    from ultralytics.nn.tasks import DetectionModel, PoseModel

    torch.manual_seed(seed)
    if task == "pose":
        model = PoseModel(cfg, ch=3, nc=nc, data_kpt_shape=KPT_SHAPE, verbose=False)
    else:
        model = DetectionModel(cfg, ch=3, nc=nc, verbose=False)
    args = trainer_args(task)
    model.nc = nc  # set_model_attributes (names: the model's default {i: 'i'} dict; they do not enter any number)
    model.args = args
    if task == "pose":
        model.kpt_shape = KPT_SHAPE
        model.kpt_oks_sigmas = None  # a COCO-style pose data yaml has none: the loss uses OKS_SIGMA
        model.kpt_names = {i: [str(k) for k in range(KPT_SHAPE[0])] for i in range(nc)}
    model.set_head_attr(max_det=args.max_det)
    for k, v in model.named_parameters():  # _setup_train: always_freeze_names = ['.dfl']
        if ".dfl" in k:
            v.requires_grad = False
    return model


def perturb_bn(model, x):
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    g = torch.Generator().manual_seed(BN_SEED)
    with torch.no_grad():
        for bn in bns:
            n = bn.num_features
            bn.weight.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
            bn.bias.copy_(torch.rand(n, generator=g) * 0.2 - 0.1)
        for bn in bns:
            bn.momentum = None
            bn.reset_running_stats()
        model.train()
        model(x)
        for bn in bns:
            n = bn.num_features
            bn.running_mean += (torch.rand(n, generator=g) * 0.04 - 0.02) * bn.running_var.sqrt()
            bn.running_var *= torch.rand(n, generator=g) * 0.1 + 0.95
            bn.momentum = 0.03
            bn.num_batches_tracked.zero_()


def is_e2e(model):
    return getattr(model.model[-1], "one2one_cv2", None) is not None


# ---------------------------------------------------------------------------------------------------------------------
# forward


def eval_outputs(model, x):
    """Eval forward on a deepcopy. End2end heads: the one2one (nms=False) output with its decoded pre-top-k tensor and
    top-k anchor index (captured by wrapping the head's own postprocess / get_topk_index), then the default
    (nms=None) one2many inference tensor."""
    m = copy.deepcopy(model).eval()
    head = m.model[-1]
    out = {}
    if not is_e2e(m):
        with torch.no_grad():
            out["eval.output"] = m(x)[0]
        return out
    seen = {}
    postprocess, get_topk_index = head.postprocess, head.get_topk_index

    def wrapped_postprocess(preds):
        seen["decoded"] = preds.permute(0, 2, 1).clone()
        return postprocess(preds)

    def wrapped_topk(scores, max_det):
        result = get_topk_index(scores, max_det)
        seen["index"] = result[2].clone()
        return result

    head.postprocess, head.get_topk_index = wrapped_postprocess, wrapped_topk
    head.end2end = True  # what nms=False does (validator / AutoBackend); 8.4.190 builds the head with it off
    with torch.no_grad():
        out["eval.output"] = m(x)[0]
    out["eval.decoded_one2one"] = seen["decoded"]
    out["eval.topk_anchor_index"] = seen["index"]
    del head.postprocess, head.get_topk_index
    head.end2end = False  # 8.4.190's default: one2many head, external NMS (the trainer's validation)
    with torch.no_grad():
        out["eval.one2many_output"] = m(x)[0]
    return out


def train_forward(model, x):
    model.train()
    preds = model(x)
    out = {}
    keys = ("boxes", "scores", "kpts", "kpts_sigma")
    if is_e2e(model):
        for branch in ("one2many", "one2one"):
            for k in keys:
                if k in preds[branch]:
                    out[f"train.{branch}.{k}"] = preds[branch][k].detach().clone()
        feats = preds["one2many"]["feats"]
    else:
        for k in keys:
            if k in preds:
                out[f"train.{k}"] = preds[k].detach().clone()
        feats = preds["feats"]
    out["train.feats.1"] = feats[1].detach().clone()
    out["train.feats.2"] = feats[2].detach().clone()
    for k, v in model.state_dict().items():
        if k.endswith((".running_mean", ".running_var")):
            out[f"after_train_forward.{k}"] = v.clone()
    return preds, out


# ---------------------------------------------------------------------------------------------------------------------
# loss


def branches(crit):
    """(label, per-branch loss object) pairs: o2m/o2o for E2ELoss, main otherwise."""
    if hasattr(crit, "one2many"):
        return [("o2m", crit.one2many), ("o2o", crit.one2one)]
    return [("main", crit)]


def instrument(crit):
    """Hooks on the reference's own objects: each assigner's outputs and get_box_metrics (candidates, overlaps,
    metrics, for the tie check), and for E2E each branch's items."""
    record = {}
    for label, part in branches(crit):
        rec = record.setdefault(label, {})
        assigner = part.assigner

        def hook(module, args, kwargs, output, rec=rec):
            assert "assign" not in rec, "assigner called twice"
            rec["assign"] = tuple(t.clone() for t in output)
            rec["mask_gt"] = args[5].clone()

        assigner.register_forward_hook(hook, with_kwargs=True)
        get_box_metrics = assigner.get_box_metrics

        def wrapped_metrics(*args, _f=get_box_metrics, rec=rec, **kwargs):
            candidates = args[4].bool().clone()
            align_metric, overlaps = _f(*args, **kwargs)
            rec["metrics"] = (candidates, align_metric.clone(), overlaps.clone())
            return align_metric, overlaps

        assigner.get_box_metrics = wrapped_metrics
        if label != "main":
            branch_loss = part.loss

            def wrapped_loss(preds, batch, _f=branch_loss, rec=rec):
                result = _f(preds, batch)
                rec["items"] = result[1]
                return result

            part.loss = wrapped_loss
    return record


def assigner_settings(assigner):
    s = {
        "class": type(assigner).__name__,
        "topk": assigner.topk,
        "topk2": assigner.topk2,
        "alpha": assigner.alpha,
        "beta": assigner.beta,
        "stride": [float(v) for v in assigner.stride],
        "stride_val": float(assigner.stride_val),
        "eps": assigner.eps,
        "num_classes": assigner.num_classes,
    }
    if hasattr(assigner, "level_range"):
        s["level_range"] = list(assigner.level_range)
        s["overlap"] = "keypoint OKS (area*0.53, OKS_SIGMA) for gts with a visible keypoint, else CIoU"
    else:
        s["overlap"] = "CIoU clamped at 0"
    return s


def tie_check(rec, topk):
    """Gts with a candidate anchor whose overlap is <= TIE_MIN_OVERLAP or whose align metric is < TIE_MIN_METRIC.
    Such a gt is at risk of a topk tie-break lottery (tie_risk) when it has fewer than topk safe candidates: then an
    implementation may or may not rank the doubtful candidate in, or pick it among the metric-0 ties."""
    candidates, align_metric, overlaps = rec["metrics"]
    mask_gt = rec["mask_gt"].squeeze(-1).bool()
    found = []
    for b in range(candidates.shape[0]):
        for g in range(candidates.shape[1]):
            if not mask_gt[b, g]:
                continue
            cand = candidates[b, g]
            ov, am = overlaps[b, g][cand], align_metric[b, g][cand]
            low = (ov <= TIE_MIN_OVERLAP) | (am < TIE_MIN_METRIC)
            if low.any():
                n_safe = int((~low).sum())
                found.append({
                    "image": b, "gt": g, "n_candidates": int(cand.sum()), "n_low": int(low.sum()),
                    "min_overlap": float(ov.min()), "min_metric": float(am.min()), "tie_risk": n_safe < topk,
                })
    return found


def assign_stats(rec):
    _, _, target_scores, fg_mask, target_gt_idx = rec["assign"]
    candidates = rec["metrics"][0]
    mask_gt = rec["mask_gt"].squeeze(-1).bool()
    per_gt, cand = [], []
    for b in range(fg_mask.shape[0]):
        n = int(mask_gt[b].sum())
        per_gt.append([int((fg_mask[b] & (target_gt_idx[b] == g)).sum()) for g in range(n)])
        cand.append([int(candidates[b, g].sum()) for g in range(n)])
    return {"fg": int(fg_mask.sum()), "fg_per_gt": per_gt, "candidates_per_gt": cand,
            "tiny_box_fg": per_gt[TINY[0]][TINY[1]]}


def grad_stats(model):
    l2, total, l1 = [], [], []
    for _, p in model.named_parameters():
        if p.grad is None:
            l2.append(-1.0)
            total.append(0.0)
            l1.append(-1.0)
            continue
        g = p.grad.detach().double()
        l2.append(g.norm().item())
        total.append(g.sum().item())
        l1.append(g.abs().sum().item())
    as64 = lambda v: torch.tensor(v, dtype=torch.float64)  # noqa: E731
    return {"grad.l2norm": as64(l2), "grad.sum": as64(total), "grad.abs_sum": as64(l1)}


def run_loss(model, preds, targets):
    crit = model.init_criterion()
    model.criterion = crit
    record = instrument(crit)
    loss, items = model.loss(targets, preds)
    total = loss.sum()
    total.backward()
    out = {f"targets.{k}": v for k, v in targets.items()}
    out["loss.total"] = total.detach().reshape(1).clone()
    out["loss.vector"] = loss.detach().clone()
    out["loss.items"] = torch.stack(list(items.values())).clone()
    for label, rec in record.items():
        _, _, target_scores, fg_mask, target_gt_idx = rec["assign"]
        prefix = "assign." if label == "main" else f"assign.{label}."
        out[prefix + "fg_mask"] = fg_mask
        out[prefix + "target_gt_idx"] = target_gt_idx
        out[prefix + "target_scores_sum"] = target_scores.sum().reshape(1)
    if "o2m" in record:
        out["loss.o2m_items"] = torch.stack(list(record["o2m"]["items"].values())).clone()
        out["loss.o2o_items"] = torch.stack(list(record["o2o"]["items"].values())).clone()
    out.update(grad_stats(model))
    return crit, record, list(items.keys()), out


def level_fg(record):
    """Foreground anchors per pyramid level and branch label: {label: [n_p3, n_p4, n_p5]}."""
    bounds = [(0, 256), (256, 320), (320, 336)]
    return {label: [int(rec["assign"][3][:, a:b].sum()) for a, b in bounds] for label, rec in record.items()}


def zero_reason(name, exact, fg, strides):
    """Why the true gradient of `name` is 0 (`exact`: its fp32 grad is exactly 0 as well)."""
    if exact:
        parts = name.split(".")
        branch, level = parts[2], int(parts[3]) if len(parts) > 3 and parts[3].isdigit() else -1
        label = "o2o" if branch.startswith("one2one_") else ("o2m" if "o2m" in fg else "main")
        what = {"cv2": "box", "cv4": "keypoint", "cv4_kpts": "keypoint", "cv4_sigma": "keypoint sigma"}
        kind = what.get(branch.replace("one2one_", ""))
        if kind and level >= 0 and fg[label][level] == 0:
            return (f"no {label} foreground anchor on stride {strides[level]}: the {kind} branch of that level enters "
                    "the loss only at foreground anchors (its fp32 grad is exactly 0 too)")
        return "float64 and fp32 grads are exactly 0"
    return next((r for suffix, r in ZERO_REASONS if name.endswith(suffix)), "float64 gradient is 0 to round-off")


def structurally_zero(model, x, targets, record):
    """Replays the train forward + loss in float64 on a copy: a parameter whose float64 gradient is below
    ZERO_GRAD_REL of the largest has a true gradient of 0. Two kinds: a BN bias whose shift a later train-mode BN
    cancels (the stored fp32 values are round-off, ~1e-10 of the largest), and branches no foreground anchor reaches
    (exactly 0 in fp32 too)."""
    crit, model.criterion = model.criterion, None  # the instrumented criterion stays out of the copy
    m = copy.deepcopy(model).double()
    model.criterion = crit
    for p in m.parameters():
        p.grad = None
    m.train()
    preds = m(x.double())
    loss, _ = m.loss(targets, preds)
    loss.sum().backward()
    norms = {k: p.grad.norm().item() for k, p in m.named_parameters() if p.grad is not None}
    fp32 = {k: p.grad for k, p in model.named_parameters() if p.grad is not None}
    top = max(norms.values())
    zero = [k for k, v in norms.items() if v <= ZERO_GRAD_REL * top]
    smallest_nonzero = min(v for v in norms.values() if v > ZERO_GRAD_REL * top) / top
    fg, strides = level_fg(record), [int(s) for s in model.model[-1].stride.tolist()]
    result = []
    for k in zero:
        exact = not bool(fp32[k].any())
        size = "0" if exact else f"{norms[k] / top:.0e} x max"
        result.append([k, f"float64 |grad| = {size}; " + zero_reason(k, exact, fg, strides)])
    return result, smallest_nonzero


# ---------------------------------------------------------------------------------------------------------------------
# metadata


def item_names(task, reg_max):
    dfl = "dfl" if reg_max > 1 else "dfl(L1 for reg_max=1)"
    if task == "pose":
        return ["box", "pose", "kobj", "cls", dfl] + (["rle"] if reg_max == 1 else [])
    return ["box", "cls", dfl]


def layout(model, task, e2e):
    head = model.model[-1]
    nc, reg_max, f = head.nc, head.reg_max, list(head.f)
    a = "336 anchors = 16x16 (stride 8) + 8x8 (stride 16) + 4x4 (stride 32), each level row-major (y then x), " \
        "anchor centre = ((x+0.5)*stride, (y+0.5)*stride) px"
    lay = {
        "A": a,
        "input": "[2,3,128,128] torch.rand, generator seed 2024",
        "train.*": "model.train(); raw head outputs as the loss consumes them (no sigmoid/decoding)",
        "boxes": "[B,4,A] ltrb distances in grid units (reg_max=1: raw conv output, channel order l,t,r,b)"
        if reg_max == 1 else f"[B,{4 * reg_max},A] DFL logits, channel = side*{reg_max} + bin, sides l,t,r,b",
        "scores": f"[B,{nc},A] class logits",
        "feats.i": f"neck outputs fed to the head from the train-mode pass: feats.1 = P4 [B,128,8,8] (layer {f[1]}), "
        f"feats.2 = P5 [B,256,4,4] (layer {f[2]}); P3 (layer {f[0]}) is not stored",
    }
    nk = 0
    if task == "pose":
        nk = head.nk
        decode = "(raw + anchor) * stride" if e2e else "(2*raw + anchor - 0.5) * stride"
        lay["kpts"] = f"[B,{nk},A] raw keypoints, channel = k*3 + (0:x, 1:y, 2:visibility logit), grid units before " \
                      f"decode (decoded x = {decode}, anchor in grid units)"
        if e2e:
            lay["kpts_sigma"] = f"[B,{2 * head.kpt_shape[0]},A] raw sigma logits, channel = k*2 + " \
                                "(0:sigma_x, 1:sigma_y)"
    kp = ", then 17x(x px, y px, visibility prob)" if task == "pose" else ""
    if e2e:
        lay["eval.output"] = f"[B,300,{6 + nk}] final end2end output (head.end2end = True, i.e. nms=False): " \
                             f"x1,y1,x2,y2 (px), score (sigmoid), class index (float){kp}"
        dk = ", decoded keypoints ((raw + anchor) * stride, sigmoid visibility)" if task == "pose" else ""
        lay["eval.decoded_one2one"] = f"[B,{4 + nc + nk},A] Detect._inference of the one2one branch: xyxy px, " \
                                      f"sigmoid scores{dk}"
        lay["eval.topk_anchor_index"] = "[B,300] anchor index of each eval.output row (get_topk_index); rows sorted " \
                                        "by score descending, near-equal scores may legitimately swap"
        lay["eval.one2many_output"] = f"[B,{4 + nc + nk},A] 8.4.190's default eval path (head.end2end = False, " \
                                      f"nms=None: one2many head, pre-NMS): cx,cy,w,h (px), sigmoid scores" + \
                                      (", decoded keypoints ((raw + anchor) * stride, sigmoid visibility)"
                                       if task == "pose" else "")
    else:
        dk = ", then decoded keypoints (x = (2*raw + anchor - 0.5) * stride, y likewise, sigmoid visibility)" \
            if task == "pose" else ""
        lay["eval.output"] = f"[B,{4 + nc + nk},A] pre-NMS inference tensor: cx,cy,w,h (px, DFL expectation " \
                             f"decoded) then sigmoid scores{dk}"
    lay["after_train_forward.*"] = "BN running stats after the single train-mode forward (momentum 0.03, unbiased var)"
    return lay


def hyp_of(args):
    return {k: getattr(args, k) for k in ("box", "cls", "dfl", "pose", "kobj", "rle", "imgsz", "epochs", "cls_pw")}


# ---------------------------------------------------------------------------------------------------------------------
# driver


def make_model_files(name, cfg, task, nc):
    x = golden_input()
    targets = golden_targets(task)
    model = build(cfg, task, nc)
    perturb_bn(model, x)
    head = model.model[-1]
    e2e = is_e2e(model)
    weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
    forward = {"input": x}
    forward.update(eval_outputs(model, x))
    preds, train_out = train_forward(model, x)
    forward.update(train_out)
    crit, record, item_keys, loss_out = run_loss(model, preds, targets)
    zero, smallest_nonzero = structurally_zero(model, x, targets, record)

    base = dict(device="cpu", model=name)
    weights_meta = common.provenance(
        **base,
        cfg=cfg,
        nc=str(nc),
        kpt_shape=KPT_SHAPE if task == "pose" else "none",
        build=f"{type(model).__name__}(cfg, ch=3, nc={nc}"
        + (f", data_kpt_shape={KPT_SHAPE}" if task == "pose" else "")
        + ") after torch.manual_seed(0), as 8.4.190's "
        + ("PoseTrainer" if task == "pose" else "DetectionTrainer")
        + ".get_model; default init incl. Detect.bias_init and initialize_weights (BN eps 1e-3, momentum 0.03); "
        "then set_model_attributes (model.args = get_cfg(default.yaml, task, imgsz=128)"
        + (", kpt_shape [17, 3], kpt_oks_sigmas None" if task == "pose" else "")
        + ") and set_head_attr(max_det=300)",
        bn_perturbation=BN_DOC,
        strides=[int(s) for s in head.stride.tolist()],
        end2end=str(e2e),
        end2end_meaning="True: the head has one2one branches (dual-head training, E2ELoss); 8.4.190 still infers "
        "with the one2many head unless head.end2end is set (nms=False)" if e2e else "False: no one2one branches",
        reg_max=str(head.reg_max),
        n_tensors=str(len(weights)),
        n_params=str(sum(p.numel() for p in model.parameters())),
        frozen="names containing '.dfl' (requires_grad False), as the trainer does",
        dtypes="all F32 except num_batches_tracked (I64)",
        state_dict_order=list(weights),
    )
    forward_meta = common.provenance(**base, order=ORDER_FORWARD, layout=layout(model, task, e2e))

    if e2e:
        crit_name = f"E2ELoss({type(crit.one2many).__name__})"
        e2e_weights = {"o2m": crit.o2m, "o2o": crit.o2o, "updates": crit.updates}
        defs = (
            "loss.vector = first return of the criterion (per-item loss x batch size, o2m*0.8 + o2o*0.2 weighted); "
            "loss.total = loss.vector.sum() (what the trainer backpropagates); loss.items = second return (a dict in "
            "8.4.190, keys in item_keys; detached, not x batch size; = one2one branch items); loss.o2m_items / "
            "loss.o2o_items = each branch's items (gains applied, not x batch)"
        )
    else:
        crit_name = type(crit).__name__
        e2e_weights = "n/a"
        defs = (
            "loss.vector = first return of the criterion (per-item loss x batch size); loss.total = "
            "loss.vector.sum() (what the trainer backpropagates); loss.items = second return (a dict in 8.4.190, "
            "keys in item_keys; detached, not x batch size)"
        )
    parts = branches(crit)
    ties = {label: tie_check(record[label], part.assigner.topk) for label, part in parts}
    risky = [(label, e) for label, found in ties.items() for e in found if e["tie_risk"]]
    if risky:
        raise SystemExit(f"gen_models: {name}: assignment depends on topk tie order: {risky}")
    loss_meta = common.provenance(
        **base,
        criterion=crit_name,
        hyp=hyp_of(model.args),
        item_names=item_names(task, head.reg_max),
        item_keys=item_keys,
        e2e_weights=e2e_weights,
        assigner={label: assigner_settings(part.assigner) for label, part in parts},
        tie_check=ties,
        tie_rule=f"listed: gts with a candidate anchor whose overlap <= {TIE_MIN_OVERLAP} or whose align metric < "
        f"{TIE_MIN_METRIC}; tie_risk: such a gt has fewer than topk other (safe) candidates. No gt has tie_risk",
        stats={label: dict(assign_stats(record[label]), fg_per_level=level_fg(record)[label]) for label, _ in parts},
        targets_seed="fixed table in gen_models.py: the 8.4.41 goldens' targets (drawn once with numpy "
        "default_rng(77): hand-picked pixel boxes with jitter), all coords k/512; changed for 8.4.190: the tiny box "
        "(row 2) moved from (170, 226) to (240, 256) /512 and (pose) its keypoints all unlabelled (v=0)",
        order=ORDER_LOSS,
        loss_definitions=defs,
        grad=GRAD_DOC,
        grad_param_names=[k for k, _ in model.named_parameters()],
        structurally_zero_grads=zero,
        structurally_zero_rule=f"float64 replay of the same train forward + loss on a copy: |grad| <= "
        f"{ZERO_GRAD_REL:g} x the largest parameter grad (the smallest other one is {smallest_nonzero:.1e} x). The "
        "stored fp32 values of the BN-cancelled ones are round-off (compare them with an absolute floor); the others "
        "are exactly 0",
    )
    return {
        f"{name}_weights.safetensors": (weights, weights_meta),
        f"{name}_forward.safetensors": (forward, forward_meta),
        f"{name}_loss.safetensors": (loss_out, loss_meta),
    }


# ---------------------------------------------------------------------------------------------------------------------
# replay


_DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32, "U8": np.uint8, "BOOL": np.bool_}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8 : 8 + n])
    meta = header.pop("__metadata__", {})
    tensors = {}
    for k, v in header.items():
        begin, end = v["data_offsets"]
        array = np.frombuffer(data[8 + n + begin : 8 + n + end], dtype=_DTYPES[v["dtype"]]).reshape(v["shape"])
        tensors[k] = torch.from_numpy(array.copy())
    return tensors, meta


def replay(out_dir, name, cfg, task, nc):
    """From the files alone: a model built from another seed, loaded with the weights file, fed the stored input and
    targets, must reproduce every stored output bit for bit."""
    weights, _ = read_safetensors(os.path.join(out_dir, f"{name}_weights.safetensors"))
    forward, _ = read_safetensors(os.path.join(out_dir, f"{name}_forward.safetensors"))
    loss_file, _ = read_safetensors(os.path.join(out_dir, f"{name}_loss.safetensors"))
    model = build(cfg, task, nc, seed=REPLAY_SEED)
    model.load_state_dict(weights, strict=True)
    x = forward["input"]
    got = {"input": x}
    got.update(eval_outputs(model, x))
    preds, train_out = train_forward(model, x)
    got.update(train_out)
    targets = {k[len("targets."):]: v for k, v in loss_file.items() if k.startswith("targets.")}
    got_loss = run_loss(model, preds, targets)[3]
    for stored, fresh, what in ((forward, got, "forward"), (loss_file, got_loss, "loss")):
        if list(stored) != list(fresh):
            raise SystemExit(f"gen_models replay: {name} {what}: tensor names differ")
        for k in stored:
            a, b = stored[k], common.as_tensor(fresh[k])
            if a.dtype != b.dtype or a.shape != b.shape or not torch.equal(a, b):
                raise SystemExit(f"gen_models replay: {name} {what}: {k} is not reproduced bit for bit")


def generate(out_dir):
    from ultralytics.nn.modules.head import Detect, Pose, Pose26

    common.setup_torch()
    # parse_model sets the head class's `legacy` flag (a class attribute) on every build: put it back afterwards so
    # the generators that run after this one in the same process see the reference's defaults.
    saved = {cls: cls.__dict__["legacy"] for cls in (Detect, Pose, Pose26) if "legacy" in cls.__dict__}
    try:
        for name, cfg, task, nc in MODELS:
            for path, (tensors, meta) in make_model_files(name, cfg, task, nc).items():
                common.write_safetensors(os.path.join(out_dir, path), tensors, meta)
        if os.environ.get("DETRAIN_GOLDEN_REPLAY", "1") != "0":  # 0 skips the replay (about half the run time)
            for name, cfg, task, nc in MODELS:
                replay(out_dir, name, cfg, task, nc)
    finally:
        for cls in (Detect, Pose, Pose26):
            if cls in saved:
                cls.legacy = saved[cls]
            elif "legacy" in cls.__dict__:
                delattr(cls, "legacy")
