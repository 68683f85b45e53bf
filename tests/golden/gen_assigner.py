"""assigner.safetensors: TaskAlignedAssigner (o2m / o2o) and PoseTaskAlignedAssigner cases of Ultralytics 8.4.190.

Detect part (README section 4, same input recipe as the 8.4.41 file): a 64 px image, 84 anchors, 3 classes. The
assigners are constructed exactly as 8.4.190's losses construct them (utils/loss.py v8DetectionLoss.__init__ and
E2ELoss.__init__): TaskAlignedAssigner(topk, num_classes, alpha=0.5, beta=6.0, stride=[8.0, 16.0, 32.0], topk2) with
eps 1e-9 and stride_val = stride[1] = 16 (utils/tal.py TaskAlignedAssigner.__init__).

Pose part (new, keys `pose.*`): PoseTaskAlignedAssigner(sigmas=OKS_SIGMA, same kwargs, num_classes=1), as
PoseLoss26.__init__ builds it for YOLO26-pose, called as
    assigner(pd_scores, pd_bboxes, anc_points, gt_labels, gt_bboxes, mask_gt, anc_strides, pd_kpts=..., gt_kpts=...)
on a 64 x 640 (W x H) image (840 anchors) whose ground truths exercise the pyramid-level gate
lo*s <= sqrt(area) <= hi*s (lo, hi) = (2, 12), including one gt whose gate leaves no candidate (ungated fallback) and
one gt without visible keypoints (box CIoU instead of OKS).

Every input is drawn from a torch.Generator; the seed is the first one (from 100) for which no stored result depends
on torch.topk's order among equal metrics (checked per gt, see tie_report). Nothing else is random.
"""

import json
import os

import common

FILES = ["assigner.safetensors"]

DETECT_SEED0 = 100
POSE_SEED0 = 100
VARIANTS = {"o2m": {"topk": 10, "topk2": None}, "o2o": {"topk": 7, "topk2": 1}}  # E2ELoss.__init__ (utils/loss.py)
ALPHA, BETA, EPS = 0.5, 6.0, 1e-9
STRIDES = [8.0, 16.0, 32.0]  # Detect.stride.tolist() as the loss passes it


# ----------------------------------------------------------------------------------------------------------------------
# inputs


def grid_anchors(width, height):
    """Pixel anchor centres and per-anchor strides, levels P3, P4, P5, row-major inside a level (make_anchors * s)."""
    import torch

    points, strides = [], []
    for s in STRIDES:
        nx, ny = int(width // s), int(height // s)
        sy, sx = torch.meshgrid(torch.arange(ny, dtype=torch.float32) + 0.5, torch.arange(nx, dtype=torch.float32) + 0.5,
                                indexing="ij")
        points.append(torch.stack((sx, sy), -1).view(-1, 2) * s)
        strides.append(torch.full((nx * ny,), s))
    return torch.cat(points), torch.cat(strides)


def level_ranges(anc_strides):
    """d ranges of the predicted box sides (in strides) per anchor: U(0.8,1.6), U(0.6,1.0), U(0.5,1.0)."""
    import torch

    lo = torch.tensor([{8.0: 0.8, 16.0: 0.6, 32.0: 0.5}[s] for s in anc_strides.tolist()])[:, None]
    hi = torch.tensor([{8.0: 1.6, 16.0: 1.0, 32.0: 1.0}[s] for s in anc_strides.tolist()])[:, None]
    return lo, hi


def boxes_around_anchors(g, anc, anc_strides, bs):
    """pd_bboxes xyxy px = anchor -/+ d*stride per side, d = lo + (hi - lo) * U(0,1) with the level's (lo, hi)."""
    import torch

    lo, hi = level_ranges(anc_strides)
    d = lo + (hi - lo) * torch.rand(bs, len(anc), 4, generator=g)
    st = anc_strides[:, None]
    return torch.cat((anc - d[..., :2] * st, anc + d[..., 2:] * st), -1)


def boxes_centred_on(g, box, n, low=0.7, high=1.8):
    """n boxes centred on `box` (xyxy) whose half-sizes are the box's times U(low, high), drawn per side."""
    import torch

    c = torch.stack(((box[0] + box[2]) / 2, (box[1] + box[3]) / 2) * 2)
    h = torch.stack(((box[2] - box[0]) / 2, (box[3] - box[1]) / 2) * 2)
    sign = torch.tensor([-1.0, -1.0, 1.0, 1.0])
    u = torch.rand(n, 4, generator=g)
    return c + sign * h * (low + (high - low) * u)


def detect_inputs(seed):
    """README section 4 recipe (it reproduces the 8.4.41 file's inputs bit for bit at seed 100)."""
    import torch

    anc, anc_strides = grid_anchors(64, 64)
    g = torch.Generator().manual_seed(seed)
    pd_scores = torch.rand(2, len(anc), 3, generator=g) * 0.98 + 0.01
    pd_bboxes = boxes_around_anchors(g, anc, anc_strides, 2)
    gt_bboxes = torch.tensor(
        [[[4, 6, 60, 58], [30, 20, 62, 50], [9, 38, 23, 52], [27, 10, 32, 16]],
         [[2, 2, 34, 30], [36, 28, 61, 62], [0, 0, 0, 0], [0, 0, 0, 0]]], dtype=torch.float32)
    gt_labels = torch.tensor([[[0], [2], [1], [2]], [[1], [0], [0], [0]]], dtype=torch.float32)
    mask_gt = torch.tensor([[[1], [1], [1], [1]], [[1], [1], [0], [0]]], dtype=torch.float32)
    tiny = gt_bboxes[0, 3]  # 5 x 6 px: anchors within +-8 px of its centre predict boxes centred on it
    cx, cy = (tiny[0] + tiny[2]) / 2, (tiny[1] + tiny[3]) / 2
    idx = [i for i, (x, y) in enumerate(anc.tolist()) if abs(x - cx) <= 8 and abs(y - cy) <= 8]
    pd_bboxes[0, idx] = boxes_centred_on(g, tiny, len(idx))
    return {
        "pd_scores": pd_scores, "pd_bboxes": pd_bboxes, "anc_points": anc, "gt_labels": gt_labels,
        "gt_bboxes": gt_bboxes, "mask_gt": mask_gt, "stride": torch.tensor(STRIDES),
    }, {"tiny_gt_anchor_override": idx}


# Pose case: image W 64 x H 640 px, so that a 16 px wide, 600 px tall gt (sqrt(area) 98 > 12*8) has its finest level
# gated off while no P4/P5 anchor centre lies strictly inside it: the gate leaves nothing and the ungated P3
# candidates are kept (PoseTaskAlignedAssigner.select_candidates_in_gts fallback).
POSE_W, POSE_H, POSE_K = 64, 640, 17
POSE_GTS = [  # per image: (xyxy px, keypoint rule, what it tests)
    [
        ([24, 20, 40, 620], "kpts", "thin 16x600: gate (P3 too small a stride, P4/P5 no anchor inside) empty -> fallback"),
        ([2, 100, 62, 300], "kpts", "60x200 (sqrt 109.5 > 96): P4+P5 only, P3 anchors inside are gated off"),
        ([10, 400, 34, 428], "kpts", "24x28 (sqrt 25.9 < 32): P3 only, a P4 anchor inside is gated off"),
        ([4, 450, 52, 500], "kpts", "48x50 (sqrt 49): P3+P4, P5 anchors inside gated off; overlaps gt 0"),
        ([40, 520, 60, 560], "none", "20x40 without visible keypoints: overlap is the box CIoU; P3 only"),
    ],
    [
        ([0, 0, 64, 640], "kpts", "whole 64x640 image (sqrt 202 > 192): P5 only"),
        ([10, 200, 50, 260], "kpts", "40x60 (sqrt 49): P3+P4, inside gt 0 (levels disjoint from it)"),
        ([20, 500, 44, 530], "kpts", "24x30 (sqrt 26.8): P3 only, inside gt 0"),
        ([13, 204, 53, 264], "dup1", "gt 1 moved by (3, 4) px, its keypoints + N(0, 2 px): anchors claimed by both"),
    ],
]


def pose_inputs(seed):
    """Inputs of the pose case; every random number comes from one generator, in the order written here."""
    import torch

    from ultralytics.utils.metrics import OKS_SIGMA

    anc, anc_strides = grid_anchors(POSE_W, POSE_H)
    bs, n_max, na = len(POSE_GTS), max(len(x) for x in POSE_GTS), len(anc)
    g = torch.Generator().manual_seed(seed)
    gt_bboxes = torch.zeros(bs, n_max, 4)
    gt_labels = torch.zeros(bs, n_max, 1)
    mask_gt = torch.zeros(bs, n_max, 1)
    gt_kpts = torch.zeros(bs, n_max, POSE_K, 3)
    for b, gts in enumerate(POSE_GTS):
        for j, (box, rule, _) in enumerate(gts):
            box = torch.tensor(box, dtype=torch.float32)
            gt_bboxes[b, j], mask_gt[b, j] = box, 1.0
            # keypoints uniform inside the box; visibility 0 / 1 / 2 with p 0.2 / 0.3 / 0.5; v=0 points sit at (0, 0)
            if rule.startswith("dup"):  # a near-duplicate of gt int(rule[3:]) of the same image
                src = gt_kpts[b, int(rule[3:])]
                v = src[:, 2].clone()
                xy = (src[:, :2] + 2.0 * torch.randn(POSE_K, 2, generator=g)) * (v > 0)[:, None]
                gt_kpts[b, j] = torch.cat((xy, v[:, None]), -1)
                continue
            xy = box[:2] + (box[2:] - box[:2]) * torch.rand(POSE_K, 2, generator=g)
            u = torch.rand(POSE_K, generator=g)
            v = torch.where(u < 0.2, 0.0, torch.where(u < 0.5, 1.0, 2.0))
            if rule == "none":
                v = torch.zeros(POSE_K)
            xy = xy * (v > 0)[:, None]
            gt_kpts[b, j] = torch.cat((xy, v[:, None]), -1)
    pd_scores = torch.rand(bs, na, 1, generator=g) * 0.98 + 0.01
    pd_bboxes = boxes_around_anchors(g, anc, anc_strides, bs)
    # Predicted keypoints: each anchor aims at the smallest gt whose box contains it (else the nearest box), i.e. that
    # gt's keypoints (box centre for invisible ones) plus N(0,1) * noise * sqrt(area), noise = U(0.02, 0.3) per anchor.
    pd_kpts = torch.zeros(bs, na, POSE_K, 2)
    noise = 0.02 + 0.28 * torch.rand(bs, na, 1, 1, generator=g)
    jitter = torch.randn(bs, na, POSE_K, 2, generator=g)
    aims = []
    for b, gts in enumerate(POSE_GTS):
        n = len(gts)
        boxes = gt_bboxes[b, :n]
        dx = (torch.maximum(boxes[None, :, 0] - anc[:, None, 0], anc[:, None, 0] - boxes[None, :, 2])).clamp(min=0)
        dy = (torch.maximum(boxes[None, :, 1] - anc[:, None, 1], anc[:, None, 1] - boxes[None, :, 3])).clamp(min=0)
        area = (boxes[:, 2:] - boxes[:, :2]).prod(-1)
        key = (dx.pow(2) + dy.pow(2)) * 1e6 + area[None]  # outside distance first, then the smaller box
        aim = key.argmin(1)
        aims.append(aim.tolist())
        centre = (boxes[:, :2] + boxes[:, 2:]) / 2
        target = torch.where(gt_kpts[b, :n, :, 2:] > 0, gt_kpts[b, :n, :, :2], centre[:, None])[aim]  # (na, K, 2)
        pd_kpts[b] = target + jitter[b] * noise[b] * area[aim].sqrt()[:, None, None]
    # The gt without visible keypoints is matched by box CIoU: anchors within +-8 px of its box predict boxes
    # centred on it (half-sizes x U(0.7, 1.3)), so its candidates have a positive overlap.
    for b, gts in enumerate(POSE_GTS):
        for j, (_, rule, _) in enumerate(gts):
            if rule != "none":
                continue
            box = gt_bboxes[b, j]
            idx = [i for i, (x, y) in enumerate(anc.tolist())
                   if box[0] - 8 <= x <= box[2] + 8 and box[1] - 8 <= y <= box[3] + 8]
            pd_bboxes[b, idx] = boxes_centred_on(g, box, len(idx), 0.7, 1.3)
    sigmas = torch.from_numpy(OKS_SIGMA).float()
    return {
        "pd_scores": pd_scores, "pd_bboxes": pd_bboxes, "anc_points": anc, "gt_labels": gt_labels,
        "gt_bboxes": gt_bboxes, "mask_gt": mask_gt, "anc_strides": anc_strides, "pd_kpts": pd_kpts,
        "gt_kpts": gt_kpts, "sigmas": sigmas, "stride": torch.tensor(STRIDES),
    }, {"kpt_aim_gt": aims}


# ----------------------------------------------------------------------------------------------------------------------
# reference calls


def make_assigner(kind, topk, topk2, nc, sigmas=None):
    from ultralytics.utils.tal import PoseTaskAlignedAssigner, TaskAlignedAssigner

    kwargs = {"topk": topk, "num_classes": nc, "alpha": ALPHA, "beta": BETA, "stride": list(STRIDES), "topk2": topk2}
    if kind == "pose":
        return PoseTaskAlignedAssigner(sigmas, **kwargs)
    return TaskAlignedAssigner(**kwargs)


def call(kind, assigner, x):
    """The loss's call: positional (pd_scores, pd_bboxes, anc_points, gt_labels, gt_bboxes, mask_gt[, anc_strides])."""
    args = [x[k].clone() for k in ("pd_scores", "pd_bboxes", "anc_points", "gt_labels", "gt_bboxes", "mask_gt")]
    if kind == "pose":
        return assigner(*args, x["anc_strides"].clone(), pd_kpts=x["pd_kpts"].clone(), gt_kpts=x["gt_kpts"].clone())
    return assigner(*args)


def internals(kind, assigner, x):
    """Re-runs the first stages of TaskAlignedAssigner._forward to get candidates, metrics and the pre-conflict mask."""
    extra = {"pd_kpts": x["pd_kpts"], "gt_kpts": x["gt_kpts"]} if kind == "pose" else {}
    assigner.bs, assigner.n_max_boxes = x["pd_scores"].shape[0], x["gt_bboxes"].shape[1]
    if kind == "pose":
        assigner.anc_strides = x["anc_strides"]
    mask_gt = x["mask_gt"]
    mask_in = assigner.select_candidates_in_gts(x["anc_points"], x["gt_bboxes"], mask_gt)
    metric, overlaps = assigner.get_box_metrics(x["pd_scores"], x["pd_bboxes"], x["gt_labels"], x["gt_bboxes"],
                                                mask_in * mask_gt, **extra)
    mask_topk = assigner.select_topk_candidates(metric, topk_mask=mask_gt.expand(-1, -1, assigner.topk).bool())
    mask_pos = mask_topk * mask_in * mask_gt.bool()
    ungated = None
    if kind == "pose":
        from ultralytics.utils.tal import TaskAlignedAssigner

        ungated = TaskAlignedAssigner.select_candidates_in_gts(assigner, x["anc_points"], x["gt_bboxes"], mask_gt)
    return mask_in, metric, overlaps, mask_pos, ungated


def tie_report(kind, assigner, x, out):
    """Lists every way the result could depend on the order torch.topk / max give equal values.

    Per valid gt: (1) fewer than topk positive metrics while a candidate (anchor inside the gt) has metric exactly 0:
    topk would fill up with arbitrary zero-metric anchors, some of them candidates; (2) a tie at the topk boundary;
    (3) topk2: equal best metrics among the survivors. Per anchor claimed by several gts: equal best overlaps.
    Also reports the brief's weaker check: a picked (final fg) anchor with metric 0.
    """
    import torch

    mask_in, metric, overlaps, mask_pos, _ = internals(kind, assigner, x)
    problems = []
    topk, topk2 = assigner.topk, assigner.topk2
    bs, n = mask_in.shape[:2]
    for b in range(bs):
        for j in range(n):
            if not x["mask_gt"][b, j, 0]:
                continue
            m, cand = metric[b, j], mask_in[b, j]
            npos = int((m > 0).sum())
            if npos < topk and bool((cand & (m == 0)).any()):
                problems.append(f"img{b} gt{j}: {npos} positive < topk {topk} and zero-metric candidates")
            if npos >= topk:
                v = m.sort(descending=True).values
                if npos > topk and v[topk - 1] == v[topk]:
                    problems.append(f"img{b} gt{j}: tie at the topk boundary")
        multi = mask_pos[b].sum(0) > 1
        for a in multi.nonzero().flatten().tolist():
            o = overlaps[b, :, a]
            if int((o == o.max()).sum()) > 1:
                problems.append(f"img{b} anchor{a}: equal best overlaps among claiming gts")
    # topk2 stage and the final check, from the conflict-resolved mask
    _, fg, pos_resolved = assigner.select_highest_overlaps(mask_pos.clone(), overlaps.clone(), n, metric.clone())
    if topk2 != topk:
        # survivors before topk2: redo the conflict resolution without the topk2 filter
        saved = assigner.topk2
        assigner.topk2 = topk
        _, _, pre = assigner.select_highest_overlaps(mask_pos.clone(), overlaps.clone(), n, metric.clone())
        assigner.topk2 = saved
        am = metric * pre
        for b in range(bs):
            for j in range(n):
                if pre[b, j].any():
                    best = am[b, j].max()
                    if best == 0 or int((am[b, j] == best).sum()) > 1:
                        problems.append(f"img{b} gt{j}: topk2 tie")
    picked_zero = int(((metric == 0) & pos_resolved.bool()).sum())
    if picked_zero:
        problems.append(f"{picked_zero} final fg (gt, anchor) pairs with metric 0")
    return problems


def stats_of(kind, assigner, x, out):
    import torch

    mask_in, metric, overlaps, mask_pos, ungated = internals(kind, assigner, x)
    fg, gt_idx = out[3], out[4]
    bs, n = x["gt_bboxes"].shape[:2]
    per_gt = [[int(((gt_idx[b] == j) & fg[b]).sum()) if x["mask_gt"][b, j, 0] else 0 for j in range(n)]
              for b in range(bs)]
    s = {
        "topk": assigner.topk, "topk2": assigner.topk2, "fg": int(fg.sum()),
        "anchors_claimed_by_several_gts": int((mask_pos.sum(1) > 1).sum()),
        "per_gt_fg": per_gt,
        "per_gt_candidates": [[int(mask_in[b, j].sum()) for j in range(n)] for b in range(bs)],
    }
    if kind == "pose":
        st = x["anc_strides"]
        s["per_gt_fg_levels"] = [[sorted({int(st[a]) for a in ((gt_idx[b] == j) & fg[b]).nonzero().flatten().tolist()})
                                  for j in range(n)] for b in range(bs)]
        s["per_gt_ungated_candidates"] = [[int(ungated[b, j].sum()) for j in range(n)] for b in range(bs)]
    return s


def gate_report(x):
    """Per valid gt: sqrt(area), levels the gate admits, candidate counts per level ungated and gated, fallback."""
    import torch

    lo, hi = 2.0, 12.0
    a = make_assigner("pose", 10, None, 1, x["sigmas"])
    _, _, _, _, ungated = internals("pose", a, x)
    gated_final = a.select_candidates_in_gts(x["anc_points"], x["gt_bboxes"], x["mask_gt"])
    st = x["anc_strides"]
    rows = []
    for b, gts in enumerate(POSE_GTS):
        for j, (box, rule, what) in enumerate(gts):
            w, h = box[2] - box[0], box[3] - box[1]
            side = (w * h) ** 0.5
            admit = [s for s in STRIDES if (side >= lo * s or s == min(STRIDES)) and (side <= hi * s or s == max(STRIDES))]
            per_level = lambda m: {int(s): int((m & (st == s)).sum()) for s in STRIDES}
            gated = ungated[b, j] & torch.tensor([s in admit for s in st.tolist()])
            rows.append({
                "image": b, "gt": j, "xyxy": box, "sqrt_area": round(side, 3), "keypoints": rule, "case": what,
                "admitted_strides": [int(s) for s in admit], "ungated_candidates": per_level(ungated[b, j]),
                "gated_candidates": per_level(gated), "fallback_to_ungated": bool(not gated.any()),
                "final_candidates": per_level(gated_final[b, j]),
            })
    return rows


def first_tie_free_seed(kind, seed0, make_inputs, nc, limit=200):
    for seed in range(seed0, seed0 + limit):
        x, info = make_inputs(seed)
        problems = {}
        for name, v in VARIANTS.items():
            a = make_assigner(kind, v["topk"], v["topk2"], nc, x.get("sigmas"))
            out = call(kind, a, x)
            p = tie_report(kind, a, x, out)
            if p:
                problems[name] = p
        if not problems:
            return seed, x, info
    raise SystemExit(f"gen_assigner: no tie-free {kind} seed in {seed0}..{seed0 + limit - 1}")


OUT_NAMES = ("target_labels", "target_bboxes", "target_scores", "fg_mask", "target_gt_idx")


def generate(out_dir):
    import torch

    tensors, stats, seeds, tie_checks = {}, {}, {}, {}
    # detect
    seed, x, info = first_tie_free_seed("detect", DETECT_SEED0, detect_inputs, 3)
    seeds["detect"] = seed
    for k in ("pd_scores", "pd_bboxes", "anc_points", "gt_labels", "gt_bboxes", "mask_gt", "stride"):
        tensors[f"in.{k}"] = x[k]
    for name, v in VARIANTS.items():
        a = make_assigner("detect", v["topk"], v["topk2"], 3)
        out = call("detect", a, x)
        for k, t in zip(OUT_NAMES, out):
            tensors[f"{name}.{k}"] = t
        stats[name] = stats_of("detect", a, x, out)
        tie_checks[name] = tie_report("detect", a, x, out) or "none"
    # pose
    pseed, px, pinfo = first_tie_free_seed("pose", POSE_SEED0, pose_inputs, 1)
    seeds["pose"] = pseed
    for k in ("pd_scores", "pd_bboxes", "anc_points", "anc_strides", "gt_labels", "gt_bboxes", "mask_gt", "pd_kpts",
              "gt_kpts", "sigmas", "stride"):
        tensors[f"pose.in.{k}"] = px[k]
    pstats, pties = {}, {}
    for name, v in VARIANTS.items():
        a = make_assigner("pose", v["topk"], v["topk2"], 1, px["sigmas"])
        out = call("pose", a, px)
        for k, t in zip(OUT_NAMES, out):
            tensors[f"pose.{name}.{k}"] = t
        pstats[name] = stats_of("pose", a, px, out)
        pties[name] = tie_report("pose", a, px, out) or "none"
    # dtypes as the reference returns them
    for k, t in tensors.items():
        assert t.dtype in (torch.float32, torch.int64, torch.bool), (k, t.dtype)

    a = make_assigner("detect", 10, None, 3)
    meta = common.provenance(
        device="cpu",
        case=("TaskAlignedAssigner(topk, num_classes=3, alpha=0.5, beta=6.0, stride=[8.0,16.0,32.0], eps=1e-9, topk2) "
              "-> stride_val=16.0 (stride[1]); built as utils/loss.py v8DetectionLoss.__init__ builds it"),
        variants=VARIANTS,
        settings={"alpha": ALPHA, "beta": BETA, "eps": EPS, "stride": STRIDES, "stride_val": a.stride_val,
                  "small_side_rule": "select_candidates_in_gts only: a valid gt side < stride_val is set to stride_val "
                                     "about the same centre; inside = strictly > 1e-9 from every edge",
                  "detect_num_classes": 3, "pose_num_classes": 1,
                  "pose_level_range": list(__import__("ultralytics.utils.tal", fromlist=["x"]).PoseTaskAlignedAssigner
                                           .level_range)},
        input_seed=f"torch.Generator seed {seed} (first seed in {DETECT_SEED0}.. whose assignment has no topk ties)",
        inputs=("imgsz 64: anchors = make_anchors of 8x8, 4x4, 2x2 grids (offset 0.5) times stride -> in.anc_points "
                "[84,2] px; in.pd_scores [2,84,3] = U(0.01,0.99) (already sigmoid probabilities); in.pd_bboxes [2,84,4] "
                "xyxy px = anchor -/+ d*stride per side, d = U(0.8,1.6) / U(0.6,1.0) / U(0.5,1.0) at strides 8 / 16 / 32; "
                "in.gt_labels [2,4,1] F32; in.gt_bboxes [2,4,4] xyxy px (gt 3 of image 0 is 5x6 px: small-target rule; "
                "predictions of the anchors within +-8 px of its centre are replaced by boxes centred on it, half-sizes "
                "x U(0.7,1.8)); in.mask_gt [2,4,1] F32 (image 1 rows 2,3 are padding); call order "
                "assigner(pd_scores, pd_bboxes, anc_points, gt_labels, gt_bboxes, mask_gt)"),
        outputs=("<variant>.target_labels [2,84] I64, target_bboxes [2,84,4] F32 xyxy px, target_scores [2,84,3] F32, "
                 "fg_mask [2,84] BOOL, target_gt_idx [2,84] I64. Background anchors: target_gt_idx 0 and target_labels / "
                 "target_bboxes are those of gt 0 of the image (not masked), target_scores all 0"),
        stats=stats,
        tie_check=tie_checks,
        detect_info=info,
        pose_case=("PoseTaskAlignedAssigner(sigmas=OKS_SIGMA (17,) F32, topk, num_classes=1, alpha=0.5, beta=6.0, "
                   "stride=[8.0,16.0,32.0], topk2), as utils/loss.py PoseLoss26.__init__ builds it; called as "
                   "assigner(pd_scores, pd_bboxes, anc_points, gt_labels, gt_bboxes, mask_gt, anc_strides, "
                   "pd_kpts=pd_kpts, gt_kpts=gt_kpts). Overlap = OKS over visible gt keypoints (v>0) with area = gt "
                   "w*h*0.53, OKS = sum_k vis*exp(-d2/((2 sigma)^2 (area+1e-9) 2)) / max(1, #vis); box CIoU (clamped "
                   "at 0) for gts without visible keypoints. Candidates: anchors inside the gt (small-side rule as "
                   "detect) on levels with 2*s <= sqrt(w*h) <= 12*s (finest level open below, coarsest open above); a "
                   "gt left with no gated candidate keeps its ungated ones"),
        pose_input_seed=f"torch.Generator seed {pseed} (first seed in {POSE_SEED0}.. with no topk ties)",
        pose_inputs=("image W 64 x H 640 px: pose.in.anc_points [840,2] px (80x8 P3, 40x4 P4, 20x2 P5 grids, row-major), "
                     "pose.in.anc_strides [840] F32 (the stride of each anchor); pose.in.pd_scores [2,840,1] U(0.01,0.99); "
                     "pose.in.pd_bboxes [2,840,4] xyxy px (detect recipe; anchors within +-8 px of the no-keypoint gt "
                     "predict boxes centred on it, half-sizes x U(0.7,1.3)); pose.in.gt_labels [2,5,1] F32 (all 0); "
                     "pose.in.gt_bboxes [2,5,4] xyxy px; pose.in.mask_gt [2,5,1] F32 (image 1 row 4 is padding); "
                     "pose.in.gt_kpts [2,5,17,3] px + visibility (0/1/2 with p 0.2/0.3/0.5 per point, v=0 points at (0,0), "
                     "padding rows 0; image 1 gt 3 copies gt 1's visibility, its points + N(0,2) px); "
                     "pose.in.pd_kpts [2,840,17,2] px (the decoded keypoints times stride, as PoseLoss26 passes them: "
                     "each anchor aims at one gt's keypoints with noise U(0.02,0.3)*sqrt(area)*N(0,1)); "
                     "pose.in.sigmas [17] F32 OKS_SIGMA; pose.in.stride [3]"),
        pose_outputs="pose.<variant>.target_labels [2,840] I64, target_bboxes [2,840,4] F32, target_scores [2,840,1] F32, "
                     "fg_mask [2,840] BOOL, target_gt_idx [2,840] I64 (same conventions as detect)",
        pose_gts=gate_report(px),
        pose_stats=pstats,
        pose_tie_check=pties,
        pose_info=pinfo,
    )
    common.write_safetensors(os.path.join(out_dir, "assigner.safetensors"), tensors, meta)
