"""musgd_yolo26n.safetensors: Ultralytics 8.4.190's MuSGD on yolo26n, its Newton-Schulz and its
muon_update.

The optimizer is BaseTrainer.build_optimizer(model, name="MuSGD", lr=0.01, momentum=0.937,
decay=5e-4) on yolo26n (gen_models' build and BN perturbation): MuSGD(muon=0.2, sgd=1.0), nesterov,
8 groups (weight x3, weight, bn x3, bn, bias x3, bias, muon x3, muon; the x3 groups hold the
head's cv3 and one2one_cv3). Three steps with constant lr and momentum from an empty state;
before each, every grad is None except a 15-parameter subset (metadata `subset`) that gets
randn * 0.01 (one torch.Generator seeded 555, in subset order, step after step).

Tensors (F32): init.<name> (before step 1), grad.<k>.<name>, param.<k>.<name> (after step k,
k = 1..3) for the subset; ns.{a..e}.input/output: zeropower_via_newtonschulz5 on (16,27),
(64,48), (80,9), (32,288), (64,2) (bf16 result stored as F32, exact); mu.{a,b,c}.grad /
momentum_in / update / momentum_out: muon_update(grad, momentum, beta 0.937, nesterov) on
(64,2), (2,64), (16,8,3,3) (update stored as the [rows, rest] view).

variant_f32acc.*: NOT the reference alone. The same NS cases and MuSGD steps (Muon parameters
only) with 8.4.190's Newton-Schulz on each parameter's exact shape (8.4.190 zero-pads matrices
with the same column count into one batch): every matmul accumulated in fp32 as one plain fp32
product, each line (A = X X^T, B = b A + c A A, X = a X + B X) rounded once to bf16, fp32
coefficients. Metadata `variant_vs_reference` says how far apart the two are (the reference's
bf16 gemm sums long rows in another order).
"""

import json
import os
from types import SimpleNamespace

import common

FILES = ["musgd_yolo26n.safetensors"]

SUBSET = [
    "model.23.cv3.0.0.0.conv.weight", "model.23.cv3.0.0.1.conv.weight", "model.23.cv3.0.1.1.conv.weight",
    "model.23.cv3.0.0.0.bn.weight", "model.23.cv3.0.0.0.bn.bias", "model.23.cv3.0.2.bias",
    "model.0.conv.weight", "model.23.cv2.0.2.weight", "model.2.m.0.cv1.conv.weight", "model.2.cv2.conv.weight",
    "model.10.m.0.attn.pe.conv.weight", "model.0.bn.weight", "model.2.m.0.cv1.bn.weight", "model.0.bn.bias",
    "model.23.cv2.0.2.bias",
]  # depthwise, rows < cols, rows > cols, square and tiny matrices, and every group kind
NS_SHAPES = {"a": (16, 27), "b": (64, 48), "c": (80, 9), "d": (32, 288), "e": (64, 2)}
MU_SHAPES = {"a": (64, 2), "b": (2, 64), "c": (16, 8, 3, 3)}
LR, MOMENTUM, DECAY, STEPS = 0.01, 0.937, 5e-4, 3
NS_A, NS_B, NS_C, NS_EPS = 3.4445, -4.7750, 2.0315, 1e-7


def emulated_ns(g):
    """detrain's Newton-Schulz on one matrix (see the module docstring)."""
    import torch

    bf = torch.bfloat16
    r = lambda t: t.to(bf).float()  # noqa: E731  one rounding to bf16
    x = g.to(bf)
    x = x / (x.norm() + NS_EPS)
    tall = g.size(0) > g.size(1)
    xf = (x.t().contiguous() if tall else x).float()
    for _ in range(5):  # fp32 products and coefficients, one rounding per line, as baddbmm
        a = r(xf @ xf.t())
        b = r(NS_B * a + NS_C * (a @ a))
        xf = r(NS_A * xf + b @ xf)
    out = xf.to(bf)
    return out.t() if tall else out


def emulated_step(optimizer, state):
    """One MuSGD step as 8.4.190 takes it, but Muon's NS per parameter through emulated_ns."""
    import torch

    for group in optimizer.param_groups:
        params = [p for p in group["params"] if p.grad is not None]
        lr, beta = group["lr"], group["momentum"]
        for p in params:
            st = state.setdefault(id(p), {"m": torch.zeros_like(p), "s": torch.zeros_like(p)})
            g = p.grad
            if group["use_muon"]:
                st["m"].mul_(beta).add_(g, alpha=1 - beta)
                u = st["m"].mul(beta).add_(g, alpha=1 - beta)
                o = emulated_ns(u.reshape(u.size(0), -1)).float()
                o.mul_(max(1, g.size(-2) / g.size(-1)) ** 0.5)
                p.data.add_(o.reshape(p.shape), alpha=-(lr * 0.2))
                buf, step_lr = st["s"], lr * 1.0
            else:
                buf, step_lr = st["m"], lr
            gd = g.add(p.data, alpha=group["weight_decay"]) if group["weight_decay"] != 0 else g
            buf.mul_(beta).add_(gd)
            p.data.add_(gd.add(buf, alpha=beta), alpha=-step_lr)


def build_model():
    import gen_models

    model = gen_models.build("yolo26n.yaml", "detect", 80)
    gen_models.perturb_bn(model, gen_models.golden_input())
    return model


def optimizer_for(model):
    from ultralytics.engine.trainer import BaseTrainer

    fake = SimpleNamespace(args=SimpleNamespace(lr0=LR, warmup_bias_lr=0.1, optimizer="MuSGD"), data={"nc": 80})
    return BaseTrainer.build_optimizer(fake, model, name="MuSGD", lr=LR, momentum=MOMENTUM, decay=DECAY)


def run_steps(model, optimizer, grads, emulate):
    named = dict(model.named_parameters())
    state, after = {}, []
    for k in range(STEPS):
        optimizer.zero_grad(set_to_none=True)
        for name in SUBSET:
            named[name].grad = grads[k][name].clone()
        if emulate:
            emulated_step(optimizer, state)
        else:
            optimizer.step()
        after.append({name: named[name].detach().clone() for name in SUBSET})
    return after


def generate(out_dir):
    import torch
    from ultralytics.optim.muon import muon_update, zeropower_via_newtonschulz5

    model = build_model()
    named = dict(model.named_parameters())
    init = {name: named[name].detach().clone() for name in SUBSET}
    gen = torch.Generator().manual_seed(555)
    grads = [{name: torch.randn(named[name].shape, generator=gen) * 0.01 for name in SUBSET} for _ in range(STEPS)]

    optimizer = optimizer_for(model)
    index = {id(p): (i, g) for i, g in enumerate(optimizer.param_groups) for p in g["params"]}
    assignment = [[n, index[id(p)][0], index[id(p)][1]["param_group"], index[id(p)][1]["lr"] / LR]
                  for n, p in model.named_parameters()]
    groups = [{"index": i, "param_group": g["param_group"], "lr": g["lr"], "lr_multiplier": g["lr"] / LR,
               "momentum": g["momentum"], "nesterov": g["nesterov"], "weight_decay": g["weight_decay"],
               "use_muon": bool(g.get("use_muon", False)), "n_params": len(g["params"])}
              for i, g in enumerate(optimizer.param_groups)]
    reference = run_steps(model, optimizer, grads, emulate=False)

    variant_model = build_model()
    variant = run_steps(variant_model, optimizer_for(variant_model), grads, emulate=True)

    out = {}
    for name in SUBSET:
        out[f"init.{name}"] = init[name]
    for k in range(STEPS):
        for name in SUBSET:
            out[f"grad.{k + 1}.{name}"] = grads[k][name]
            out[f"param.{k + 1}.{name}"] = reference[k][name]
    ns_gen = torch.Generator().manual_seed(556)
    worst = {"ns": 0.0, "param": 0.0}
    for key, shape in NS_SHAPES.items():
        g = torch.randn(shape, generator=ns_gen)
        out[f"ns.{key}.input"] = g
        ref = zeropower_via_newtonschulz5(g).float()
        out[f"ns.{key}.output"] = ref
        emu = emulated_ns(g).float()
        out[f"variant_f32acc.ns.{key}.output"] = emu
        worst["ns"] = max(worst["ns"], float((emu - ref).norm() / ref.norm()))
    for key, shape in MU_SHAPES.items():
        g = torch.randn(shape, generator=ns_gen) * 0.01
        m = torch.randn(shape, generator=ns_gen) * 0.01
        out[f"mu.{key}.grad"] = g
        out[f"mu.{key}.momentum_in"] = m.clone()
        u = muon_update(g, m, beta=MOMENTUM, nesterov=True)
        out[f"mu.{key}.update"] = u.float().reshape(shape[0], -1)
        out[f"mu.{key}.momentum_out"] = m
    muon_names = {n for n, gi, kind, _ in assignment if kind == "muon"}
    for k in range(STEPS):
        for name in SUBSET:
            if name in muon_names:
                out[f"variant_f32acc.param.{k + 1}.{name}"] = variant[k][name]
                worst["param"] = max(worst["param"], float((variant[k][name] - reference[k][name]).abs().max()))
    meta = common.provenance(
        model="yolo26n (gen_models' build: seed 0, BN perturbed and calibrated)",
        optimizer="BaseTrainer.build_optimizer(model, name='MuSGD', lr=0.01, momentum=0.937, decay=0.0005) -> "
        "MuSGD(muon=0.2, sgd=1.0), nesterov, 8 param groups",
        param_groups=groups,
        group_assignment=assignment,
        subset=SUBSET,
        procedure=__doc__.split("\n\n")[1].replace("\n", " "),
        tensors=__doc__.split("\n\n")[2].replace("\n", " "),
        variant_f32acc=__doc__.split("\n\n")[3].replace("\n", " "),
        variant_vs_reference={"ns_max_relative_norm": worst["ns"], "param_max_abs": worst["param"]},
    )
    common.write_safetensors(os.path.join(out_dir, "musgd_yolo26n.safetensors"), out, meta)
    print("gen_musgd: variant vs reference", json.dumps(worst))
