"""musgd_yolo26n.safetensors: Ultralytics 8.4.190's MuSGD on yolo26n, its Newton-Schulz and its muon_update.

The optimizer is built as the trainer builds it: BaseTrainer.build_optimizer(model, name="MuSGD", lr=0.01,
momentum=0.937, decay=5e-4) (engine/trainer.py) -> MuSGD(muon=0.2, sgd=1.0), nesterov, 8 param groups
(weight x3, weight, bn x3, bn, bias x3, bias, muon x3, muon; the x3 groups hold exactly the parameters of the head's
cv3 and one2one_cv3). The model is yolo26n (DetectionModel("yolo26n.yaml", nc=80) after torch.manual_seed(0)) with
the README section 1 BN perturbation (perturb_bn below), i.e. the state of yolo26n_weights.safetensors.

Three steps from an empty state, constant lr and momentum. Before each step every grad is None except the subset
(metadata `subset`): the 15 parameters of the 8.4.41 file (grad = randn * 0.01, one torch.Generator seeded 555,
drawn in that order, step after step: the same grads as the old file) and 4 "bucket partners" (generator 556, same
rule) chosen so that 8.4.190's muon_update zero-pads and batches some subset matrices as the trainer does with every
parameter present (optim/muon.py muon_update: matrices with the same column count and scale share one batched
Newton-Schulz call, rows zero-padded to the largest):
  model.23.cv3.2.0.0.conv.weight (256,9)  pads model.23.cv3.0.0.0.conv.weight (64,9) to 256 rows (tall in both)
  model.1.conv.weight (32,144)            pads model.2.m.0.cv1.conv.weight (8,144) to 32 rows (wide in both)
  model.4.cv2.conv.weight (128,96) with model.16.cv2.conv.weight (64,96): padded to 128 rows the latter turns tall,
                                          so Newton-Schulz works on the transpose (orientation flip)
With the partners present, the subset's buckets are those of a full trainer step (checked: metadata
independence_check).

Tensors (F32): init.<name>, grad.<k>.<name>, param.<k>.<name> (k = 1..3) for the subset;
exact.param.<k>.<name> for the Muon subset parameters: the same MuSGD run with Newton-Schulz applied per parameter on
its exact shape (muon_update called one tensor at a time), as detrain buckets;
variant_f32acc.param.<k>.<name> (Muon parameters) and variant_f32acc.ns.<x>.output: the reference run with
zeropower_via_newtonschulz5 replaced by ns_f32acc (fp32-accumulating matmuls, every bf16 rounding point of 8.4.190);
ns.{a..e}.input/output and mu.{a,b,c}.grad/momentum_in/update/momentum_out (inputs from one generator seeded 777,
as the 8.4.41 file).
"""

import contextlib
import copy
import json
import os
from types import SimpleNamespace

import common

FILES = ["musgd_yolo26n.safetensors"]

SUBSET_OLD = [
    "model.23.cv3.0.0.0.conv.weight", "model.23.cv3.0.0.1.conv.weight", "model.23.cv3.0.1.1.conv.weight",
    "model.23.cv3.0.0.0.bn.weight", "model.23.cv3.0.0.0.bn.bias", "model.23.cv3.0.2.bias",
    "model.0.conv.weight", "model.23.cv2.0.2.weight", "model.2.m.0.cv1.conv.weight", "model.2.cv2.conv.weight",
    "model.10.m.0.attn.pe.conv.weight", "model.0.bn.weight", "model.2.m.0.cv1.bn.weight", "model.0.bn.bias",
    "model.23.cv2.0.2.bias",
]  # depthwise, rows < cols, rows > cols, square and tiny matrices, and every group kind (8.4.41 file)
PARTNERS = [
    "model.23.cv3.2.0.0.conv.weight", "model.1.conv.weight", "model.4.cv2.conv.weight", "model.16.cv2.conv.weight",
]
SUBSET = SUBSET_OLD + PARTNERS
GRAD_SEED, PARTNER_SEED, OTHERS_SEED, CASE_SEED = 555, 556, 557, 777
NS_SHAPES = {"a": (16, 27), "b": (64, 48), "c": (80, 9), "d": (32, 288), "e": (64, 2)}
MU_SHAPES = {"a": (64, 2), "b": (2, 64), "c": (16, 8, 3, 3)}
LR, MOMENTUM, DECAY, STEPS = 0.01, 0.937, 5e-4, 3
NS_A, NS_B, NS_C, NS_EPS = 3.4445, -4.7750, 2.0315, 1e-7
BUILD_SEED, BN_SEED, INPUT_SEED = 0, 1234, 2024


# ----------------------------------------------------------------------------------------------------------------------
# model


def perturb_bn(model):
    """README section 1: BN weight U(0.75,1.25), bias U(-0.1,0.1) (generator 1234, per layer in modules() order);
    running stats := batch statistics of one train-mode pass on the fixed input (momentum None: mean, unbiased var);
    then running_mean += U(-0.02,0.02)*sqrt(running_var), running_var *= U(0.95,1.05); momentum 0.03; count 0."""
    import torch

    bns = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    g = torch.Generator().manual_seed(BN_SEED)
    u = lambda n, lo, hi: torch.rand(n, generator=g) * (hi - lo) + lo  # noqa: E731
    with torch.no_grad():
        for bn in bns:
            bn.weight.copy_(u(bn.num_features, 0.75, 1.25))
            bn.bias.copy_(u(bn.num_features, -0.1, 0.1))
        for bn in bns:
            bn.momentum = None
            bn.reset_running_stats()
        model.train()
        model(torch.rand(2, 3, 128, 128, generator=torch.Generator().manual_seed(INPUT_SEED)))
        for bn in bns:
            bn.running_mean += u(bn.num_features, -0.02, 0.02) * bn.running_var.sqrt()
            bn.running_var *= u(bn.num_features, 0.95, 1.05)
            bn.momentum = 0.03
            bn.num_batches_tracked.zero_()
    return model


def build_model():
    import torch

    from ultralytics.nn.tasks import DetectionModel

    torch.manual_seed(BUILD_SEED)
    model = DetectionModel("yolo26n.yaml", ch=3, nc=80, verbose=False)
    for k, v in model.named_parameters():  # the trainer freezes '.dfl' (yolo26n: reg_max 1, no dfl parameter)
        if ".dfl" in k:
            v.requires_grad = False
    return perturb_bn(model)


def build_optimizer(model):
    from ultralytics.engine.trainer import BaseTrainer

    fake = SimpleNamespace(args=SimpleNamespace(lr0=LR, warmup_bias_lr=0.1, optimizer="MuSGD"), data={"nc": 80})
    return BaseTrainer.build_optimizer(fake, model, name="MuSGD", lr=LR, momentum=MOMENTUM, decay=DECAY)


# ----------------------------------------------------------------------------------------------------------------------
# Newton-Schulz emulations (measurements and the variant_f32acc tensors)


def ns_emulated(G, acc="f32", fused=True, eps=NS_EPS):
    """zeropower_via_newtonschulz5 of optim/muon.py with explicit rounding points, for 2-D or 3-D G.

    X = bf16(G); X /= bf16(bf16(||X||) + eps) per matrix; transpose when rows > cols; 5 times:
    A = bf16(X Xt); B = bf16(b A + c A A) (one baddbmm: one rounding); X = bf16(a X + B X) (one baddbmm).
    acc: "f32" accumulates each matmul and the fused combination in fp32 (then one bf16 rounding); "f64" in fp64;
    "fp32ns" runs the whole iteration in fp32 (no bf16 at all after the input cast). fused=False rounds the terms
    separately as 8.4.41 wrote them: B = bf16(bf16(b A) + bf16(bf16(c A) A)), X = bf16(bf16(a X) + bf16(B X)).
    """
    import torch

    bf = torch.bfloat16
    t = {"f32": torch.float32, "f64": torch.float64, "fp32ns": torch.float32}[acc]
    r = (lambda z: z.to(bf).to(t)) if acc != "fp32ns" else (lambda z: z)
    X = G.reshape(-1, G.size(-2), G.size(-1)).to(bf).to(t)
    n = r(r(X.norm(dim=(-2, -1), keepdim=True)) + eps)
    X = r(X / n)
    tall = G.size(-2) > G.size(-1)
    if tall:
        X = X.transpose(-2, -1)
    for _ in range(5):
        A = r(X @ X.transpose(-2, -1))
        if fused:
            B = r(NS_B * A + NS_C * (A @ A))
            X = r(NS_A * X + B @ X)
        else:
            B = r(r(NS_B * A) + r(r(NS_C * A) @ A))
            X = r(r(NS_A * X) + r(B @ X))
    if tall:
        X = X.transpose(-2, -1)
    return X.reshape(G.shape).to(bf) if acc != "fp32ns" else X.reshape(G.shape)


def ns_f32acc(G):
    return ns_emulated(G, "f32", True)


@contextlib.contextmanager
def patched_ns(fn):
    """Replaces zeropower_via_newtonschulz5 where muon_update looks it up (module global of optim/muon.py)."""
    import ultralytics.optim.muon as muon

    saved = muon.zeropower_via_newtonschulz5
    muon.zeropower_via_newtonschulz5 = fn
    try:
        yield
    finally:
        muon.zeropower_via_newtonschulz5 = saved


@contextlib.contextmanager
def per_parameter_muon():
    """MuSGD.step calls muon_update on the group's list; this calls it one tensor at a time (exact shapes)."""
    import ultralytics.optim.muon as muon

    saved = muon.muon_update

    def one_by_one(grad, momentum, beta=0.95, nesterov=True):
        if not isinstance(grad, (list, tuple)):
            return saved(grad, momentum, beta, nesterov)
        return [saved(g, m, beta, nesterov) for g, m in zip(grad, momentum)]

    muon.muon_update = one_by_one
    try:
        yield
    finally:
        muon.muon_update = saved


# ----------------------------------------------------------------------------------------------------------------------
# runs


def draw_grads(params):
    import torch

    grads = {k: {} for k in range(1, STEPS + 1)}
    for seed, names in ((GRAD_SEED, SUBSET_OLD), (PARTNER_SEED, PARTNERS)):
        g = torch.Generator().manual_seed(seed)
        for k in range(1, STEPS + 1):
            for n in names:
                grads[k][n] = torch.randn(params[n].shape, generator=g) * 0.01
    return grads


def draw_other_grads(params):
    import torch

    g = torch.Generator().manual_seed(OTHERS_SEED)
    return {k: {n: torch.randn(p.shape, generator=g) * 0.01 for n, p in params.items()
                if n not in SUBSET and p.requires_grad} for k in range(1, STEPS + 1)}


def run_steps(model0, grads, others=None):
    """3 MuSGD steps on a copy of model0; returns {k: {name: param after step k}} for the subset."""
    import torch

    model = copy.deepcopy(model0)
    opt = build_optimizer(model)
    params = dict(model.named_parameters())
    out = {}
    for k in range(1, STEPS + 1):
        opt.zero_grad(set_to_none=True)
        for n, g in grads[k].items():
            params[n].grad = g.clone()
        if others is not None:
            for n, g in others[k].items():
                params[n].grad = g.clone()
        opt.step()
        out[k] = {n: params[n].detach().clone() for n in SUBSET}
    return out


def compare(a, b, init, names):
    """[max |param diff|, max over (tensor, step) of ||update diff|| / ||update||] with update = p_k - p_(k-1)."""
    dmax, rmax = 0.0, 0.0
    for n in names:
        prev_a, prev_b = init[n], init[n]
        for k in range(1, STEPS + 1):
            pa, pb = a[k][n], b[k][n]
            dmax = max(dmax, (pa - pb).abs().max().item())
            ua, ub = pa - prev_a, pb - prev_b
            rmax = max(rmax, ((ua - ub).norm() / ua.norm()).item())
            prev_a, prev_b = pa, pb
    return [dmax, rmax]


def bucket_layout(model, opt, names):
    """How muon_update groups the given Muon parameters (one MuSGD group at a time): exact vs padded shape."""
    info = []
    ids = {id(p): n for n, p in model.named_parameters()}
    for gi, g in enumerate(opt.param_groups):
        if not g.get("use_muon"):
            continue
        ps = [p for p in g["params"] if ids[id(p)] in names]
        buckets = {}
        for p in ps:
            cols = p[0].numel()
            scale = max(1, p.size(-2) / p.size(-1)) ** 0.5
            buckets.setdefault((cols, scale), []).append(p)
        for (cols, _), items in buckets.items():
            items.sort(key=lambda p: -p.size(0))
            start, groups = 0, []
            for j in range(1, len(items) + 1):
                if j == len(items) or items[start].size(0) > 16 * items[j].size(0):
                    groups.append(items[start:j])
                    start = j
            for grp in groups:
                rows = grp[0].size(0)
                for p in grp:
                    info.append({"name": ids[id(p)], "group": gi, "exact": [p.size(0), cols], "padded": [rows, cols],
                                 "batch": len(grp), "tall_exact": p.size(0) > cols, "tall_padded": rows > cols})
    order = SUBSET + [n for n, _ in model.named_parameters() if n not in SUBSET]
    return sorted(info, key=lambda d: order.index(d["name"]))


def padded_vs_exact_full(model):
    """One muon_update over every Muon parameter of each group (random grads, zero momentum): padded batches (the
    reference) vs one call per parameter (exact shapes). Per parameter: max |d update| and ||d|| / ||update||."""
    import torch

    import ultralytics.optim.muon as muon

    opt = build_optimizer(model)
    names = {id(p): n for n, p in model.named_parameters()}
    g = torch.Generator().manual_seed(OTHERS_SEED + 1)
    rows = []
    for gi, grp in enumerate(opt.param_groups):
        if not grp.get("use_muon"):
            continue
        ps = grp["params"]
        grads = [torch.randn(p.shape, generator=g) * 0.01 for p in ps]
        padded = muon.muon_update(grads, [torch.zeros_like(p) for p in ps], beta=MOMENTUM, nesterov=True)
        exact = [muon.muon_update(gr, torch.zeros_like(p), beta=MOMENTUM, nesterov=True) for gr, p in zip(grads, ps)]
        padded_rows = {}
        for p in ps:
            padded_rows.setdefault(p[0].numel(), []).append(p.size(0))
        for p, u, e in zip(ps, padded, exact):
            d = (u - e)
            rows.append({"name": names[id(p)], "group": gi, "exact": [p.size(0), p[0].numel()],
                         "max_abs": d.abs().max().item(), "rel": (d.norm() / e.norm()).item()})
    return rows


def param_groups_meta(model, opt):
    names = {id(p): n for n, p in model.named_parameters()}
    group_of = {}
    groups = []
    for i, g in enumerate(opt.param_groups):
        for p in g["params"]:
            group_of[id(p)] = i
        groups.append({"index": i, "param_group": g["param_group"], "lr": g["lr"], "lr_multiplier": g["lr"] / LR,
                       "momentum": g["momentum"], "nesterov": g["nesterov"], "weight_decay": g["weight_decay"],
                       "use_muon": bool(g.get("use_muon", False)), "n_params": len(g["params"])})
    assignment = []
    for n, p in model.named_parameters():
        i = group_of.get(id(p))
        if i is None:
            assignment.append([n, -1, "none", 0.0])
        else:
            assignment.append([n, i, opt.param_groups[i]["param_group"], opt.param_groups[i]["lr"] / LR])
    return groups, assignment


def generate(out_dir):
    import torch

    import ultralytics.optim.muon as muon

    model = build_model()
    params = dict(model.named_parameters())
    init = {n: params[n].detach().clone() for n in SUBSET}
    opt0 = build_optimizer(model)  # only read (groups and buckets); the runs build their own on copies
    groups, assignment = param_groups_meta(model, opt0)
    muon_names = [n for n in SUBSET if params[n].ndim in (2, 4)]
    grads = draw_grads(params)

    reference = run_steps(model, grads)
    rerun = run_steps(model, grads)
    with per_parameter_muon():
        exact = run_steps(model, grads)
    with patched_ns(ns_f32acc):
        variant = run_steps(model, grads)
    with patched_ns(lambda G: ns_emulated(G, "f64", True)):
        variant64 = run_steps(model, grads)
    with patched_ns(lambda G: ns_emulated(G, "f32", False)):
        unfused = run_steps(model, grads)
    with per_parameter_muon(), patched_ns(lambda G: ns_emulated(G, "f32", False)):
        unfused_exact = run_steps(model, grads)
    with patched_ns(lambda G: ns_emulated(G, "fp32ns", True)):
        fp32ns = run_steps(model, grads)
    full = run_steps(model, grads, draw_other_grads(params))

    tensors = {}
    for n in SUBSET:
        tensors[f"init.{n}"] = init[n]
    for k in range(1, STEPS + 1):
        for n in SUBSET:
            tensors[f"grad.{k}.{n}"] = grads[k][n]
        for n in SUBSET:
            tensors[f"param.{k}.{n}"] = reference[k][n]
    for k in range(1, STEPS + 1):
        for n in muon_names:
            tensors[f"variant_f32acc.param.{k}.{n}"] = variant[k][n]
    for k in range(1, STEPS + 1):
        for n in muon_names:
            tensors[f"exact.param.{k}.{n}"] = exact[k][n]

    g = torch.Generator().manual_seed(CASE_SEED)
    ns_stats = {}
    for x, shape in NS_SHAPES.items():
        inp = torch.randn(shape, generator=g)
        out = muon.zeropower_via_newtonschulz5(inp).float()
        var = ns_f32acc(inp).float()
        tensors[f"ns.{x}.input"] = inp
        tensors[f"ns.{x}.output"] = out
        tensors[f"variant_f32acc.ns.{x}.output"] = var
        unf = ns_emulated(inp, "f32", False).float()
        ns_stats[x] = {"shape": list(shape), "ref_vs_variant_rel": ((out - var).norm() / out.norm()).item(),
                       "ref_vs_variant_bitwise_equal": bool(torch.equal(out, var)),
                       "ref_vs_unfused_rel": ((out - unf).norm() / out.norm()).item()}
    for x, shape in MU_SHAPES.items():
        grad = torch.randn(shape, generator=g)
        mom = torch.randn(shape, generator=g) * 0.5
        mom_out = mom.clone()
        upd = muon.muon_update(grad, mom_out, beta=MOMENTUM, nesterov=True)
        tensors[f"mu.{x}.grad"] = grad
        tensors[f"mu.{x}.momentum_in"] = mom
        tensors[f"mu.{x}.update"] = upd.reshape(shape[0], -1)  # the [rows, rest] view, as the 8.4.41 file stored it
        tensors[f"mu.{x}.momentum_out"] = mom_out

    layout = bucket_layout(model, opt0, set(SUBSET))
    independence = compare(reference, full, init, SUBSET)
    meta = common.provenance(
        device="cpu",
        model=("yolo26n (state of yolo26n_weights.safetensors: DetectionModel('yolo26n.yaml', ch=3, nc=80) after "
               "torch.manual_seed(0), default init + README section 1 BN perturbation, generator 1234, calibrated on "
               "torch.rand(2,3,128,128) of generator 2024)"),
        optimizer=("BaseTrainer.build_optimizer(model, name='MuSGD', lr=0.01, momentum=0.937, decay=0.0005) -> "
                   "MuSGD(muon=0.2, sgd=1.0), nesterov=True, 8 param groups; Muon params: ndim in {2, 4}; x3 groups: "
                   "the parameters of model[-1].cv3 and model[-1].one2one_cv3 (by identity)"),
        param_groups=groups,
        group_assignment=assignment,
        subset=SUBSET,
        subset_8_4_41=SUBSET_OLD,
        bucket_partners=PARTNERS,
        muon_subset=muon_names,
        buckets=layout,
        procedure=("3 steps; before each step: zero_grad(set_to_none=True), then ONLY the subset parameters get "
                   "grad = torch.randn(shape, generator) * 0.01: the 15 8.4.41 names from one torch.Generator seeded "
                   "555, the 4 bucket partners from one seeded 556, each drawn in subset order, step after step; all "
                   "other parameters have grad None and are skipped by MuSGD; then opt.step(). Optimizer state starts "
                   "empty. momentum is constant (no warmup ramp), lr constant."),
        independence_check=(f"re-running with every other parameter also receiving random grads (generator 557) "
                            f"changes the subset results by max|dp| {independence[0]:.3g}, max rel update "
                            f"{independence[1]:.3g} ({'bit-identical' if independence[0] == 0 else 'NOT identical'}): "
                            "muon_update batches by (columns, scale) within a group, and the partners give the subset "
                            "the buckets of a full step"),
        measured_variation={
            "note": "max|param diff| over subset and steps, and max over (tensor, step) of ||update diff|| / ||update||",
            "rerun_same_threads": compare(reference, rerun, init, SUBSET),
            "reference_vs_exact_shape_NS": compare(reference, exact, init, muon_names),
            "reference_vs_variant_f32acc": compare(reference, variant, init, muon_names),
            "variant_f32acc_vs_f64acc": compare(variant, variant64, init, muon_names),
            "unfused_rounding_NS (8.4.41 rounding points, fp32 acc)": compare(reference, unfused, init, muon_names),
            "unfused_rounding_NS_exact_shapes": compare(reference, unfused_exact, init, muon_names),
            "exact_vs_unfused_exact": compare(exact, unfused_exact, init, muon_names),
            "fp32_NS_instead_of_bf16": compare(reference, fp32ns, init, muon_names),
            "every_param_has_grad": independence,
        },
        ns_cases=ns_stats,
        variant_f32acc=("NOT produced by the reference alone: the reference MuSGD run (same padded batches) with "
                        "zeropower_via_newtonschulz5 replaced by an emulation that keeps every bf16 rounding point of "
                        "8.4.190 (X=bf16(G); X/=bf16(bf16(norm)+1e-7); A=bf16(X@X.T); B=bf16(b*A+c*A@A) (one baddbmm); "
                        "X=bf16(a*X+B@X) (one baddbmm)) and computes each matmul and fused combination in fp32 "
                        "(torch float32 matmul), rounding once to bf16. Muon parameters only; SGD parameters use "
                        "param.* unchanged"),
        exact=("exact.param.<k>.<name> (Muon subset parameters): the same MuSGD run with muon_update called one "
               "parameter at a time, so Newton-Schulz runs on each parameter's exact (rows, rest) shape (no padding, "
               "no batching), as detrain buckets; SGD parameters use param.* unchanged"),
        tensors=("init.<name>: params before step 1; grad.<k>.<name>: grad used in step k; param.<k>.<name>: params "
                 "after step k (k=1..3) of the reference. ns.<x>.input/output: zeropower_via_newtonschulz5(input) (bf16 "
                 "result as F32). mu.<x>.grad/momentum_in -> muon_update(grad, momentum, beta=0.937, nesterov=True): "
                 "update (F32: the bf16 NS result cast to F32, then times sqrt(max(1, rows/cols)) in F32; stored as "
                 "the [rows, rest] view) and momentum_out (the buffer after m = m*beta; m += (1-beta)*g in place). "
                 "ns/mu inputs: one torch.Generator seeded 777: ns a..e randn(shape), then per mu case randn(shape) "
                 "(grad) and randn(shape)*0.5 (momentum_in)"),
    )
    common.write_safetensors(os.path.join(out_dir, "musgd_yolo26n.safetensors"), tensors, meta)
