"""schedule.safetensors: lr, momentum and accumulate at every iteration of short real training runs.

Ultralytics 8.4.190's own DetectionTrainer (ultralytics.models.yolo.detect.DetectionTrainer) trains
yolo26n.yaml (nc 1) on a synthetic YOLO-format data set written into a temporary folder: 80 training
images of 64x64 (one box each; PNG, so decoding is exact) and 8 validation images, imgsz 64, batch 8
(nb = 10 iterations per epoch), workers 0, device cpu, amp off, plots off, val False (the trainer
still validates after the final epoch). Callbacks record what the trainer does; nothing here
computes a schedule itself. Trainer settings common to every case: nbs 64, batch 8, lr0 0.01,
momentum 0.937, weight_decay 5e-4, warmup_momentum 0.8, warmup_bias_lr 0.1, lrf 0.01, seed 0.

Cases (optimizer, epochs, warmup_epochs, close_mosaic, cos_lr):
- a: SGD, 3, 3.0, 1, False.
- b: SGD, 5, 1.0, 2, True.
- c: auto, 3, 3.0, 1, False. 8.4.190 picks AdamW for this short run (iterations 6 <= 10000): lr0 0.002 =
  round(0.002 * 5 / (4 + nc), 6), betas (0.9, 0.999), warmup_bias_lr 0.
- d: SGD, 2, 3.0, 1, False, with batch 5 and fraction 0.1 (8 images, nb 2): accumulate round(64 / 5) = 13
  is capped to nb * epochs = 4, while the weight decay keeps 13.
- e: SGD, 2, 3.0, 2, False: mosaic is closed from epoch 0. The recorder makes the model raise "out of
  memory" once at epoch 0, i 2, so the trainer takes its first-epoch retry: batch 8 -> 4, the loader is
  rebuilt (mosaic on again), the close gate is re-armed and epoch 0 starts over.

Tensors, per case `<c>`, one row per recorded iteration (for a-d ni = i + nb * epoch runs 0..iters-1;
case e also holds the two iterations of the aborted pass). Groups in optimizer order, names in
metadata `<c>.groups`:
- `<c>.epoch`, `<c>.i` [iters] I64: the epoch and the batch index of the row.
- `<c>.lr` [iters, groups] F64: param_group["lr"] at on_train_batch_end, i.e. the lr the
  optimizer step of that iteration used (if it stepped).
- `<c>.momentum` [iters, groups] F64: param_group["momentum"] at on_train_batch_end; for Adam-type
  groups (no "momentum" key, so the trainer does not warm it up) betas[0] (metadata `<c>.momentum_key`).
- `<c>.accumulate` [iters] I64: trainer.accumulate at on_train_batch_end.
- `<c>.stepped` [iters] BOOL: whether trainer.optimizer_step() ran in that iteration (the
  trainer's `ni - last_opt_step >= accumulate` rule; last_opt_step is a local of _do_train, so the
  recorder wraps optimizer_step instead).
- per epoch pass (a pass = one run of the batch loop; passes == epochs except in case e):
  `<c>.pass_epoch` [passes] I64; `<c>.epoch_mosaic` [passes] BOOL: mosaic on at the first batch of the
  pass (after the trainer's close_mosaic check ran; 8.4.190's YOLODataset has no `mosaic`
  attribute, so this reads the Mosaic transform in dataset.transforms); `<c>.epoch_mosaic_p` [passes]
  F64: that transform's p (1.0 on, 0.0 after close_mosaic rebuilt the transforms);
  `<c>.pass_batch`, `<c>.pass_nb`, `<c>.pass_nw` [passes] I64: trainer.batch_size, len(train_loader),
  trainer._get_warmup_iterations(nb); `<c>.pass_accumulate_start` [passes] I64: trainer.accumulate at
  on_train_batch_start of i 0 (before that batch's warmup update).
- `<c>.epoch_end_lr` [epochs, groups] F64: trainer.lr ({"lr/pg<k>": ...}) at on_train_epoch_end,
  the values the trainer writes to results.csv (which prints them with %.6g: metadata
  `<c>.results_csv_lr`).

Metadata (JSON strings) per case: `<c>.settings` (every trainer override used), `<c>.nb`,
`<c>.nw` (trainer._get_warmup_iterations(nb) at on_train_start), `<c>.iters`, `<c>.epochs`,
`<c>.optimizer` (class name the trainer built), `<c>.args_after` (optimizer, lr0, momentum,
warmup_bias_lr as the trainer left them in args), `<c>.groups` (list of {name, initial_lr,
weight_decay, params, nesterov}), `<c>.momentum_key`, `<c>.weight_decay_scaled` (the decay of the
weight group: weight_decay * batch * accumulate / nbs with the uncapped accumulate),
`<c>.accumulate_nominal` (trainer.accumulate at on_train_start: max(round(nbs / batch), 1) capped at
nb * epochs), `<c>.results_csv_lr`, `<c>.close_mosaic_calls` ([epoch, Mosaic p found] per call of
trainer._close_dataloader_mosaic), `<c>.simulated_oom_at` ([epoch, i] or null).
File-level: `dataset`, `model`, `recorded_at`.
"""

import json
import os
import tempfile

import numpy as np

import common

FILES = ["schedule.safetensors"]

COMMON = dict(
    model="yolo26n.yaml",
    imgsz=64,
    batch=8,
    nbs=64,
    lr0=0.01,
    momentum=0.937,
    weight_decay=0.0005,
    warmup_momentum=0.8,
    warmup_bias_lr=0.1,
    lrf=0.01,
    workers=0,
    device="cpu",
    amp=False,
    plots=False,
    val=False,
    seed=0,
    deterministic=True,
    verbose=False,
    exist_ok=True,
    cache=False,
    patience=100,
)
CASES = {
    "a": dict(optimizer="SGD", epochs=3, warmup_epochs=3.0, close_mosaic=1, cos_lr=False),
    "b": dict(optimizer="SGD", epochs=5, warmup_epochs=1.0, close_mosaic=2, cos_lr=True),
    "c": dict(optimizer="auto", epochs=3, warmup_epochs=3.0, close_mosaic=1, cos_lr=False),
    # accumulate cap: round(64 / 5) = 13 > nb * epochs = 2 * 2, so the cap (4) bites; decay keeps 13
    "d": dict(optimizer="SGD", epochs=2, warmup_epochs=3.0, close_mosaic=1, cos_lr=False, batch=5, fraction=0.1),
    # the first-epoch OOM retry: mosaic closed from epoch 0, a simulated OOM at (0, 2) rebuilds the loader
    "e": dict(optimizer="SGD", epochs=2, warmup_epochs=3.0, close_mosaic=2, cos_lr=False),
}
OOM_AT = {"e": (0, 2)}  # (epoch, i) where the recorder makes the model's forward raise "out of memory" once
N_TRAIN, N_VAL, SIZE = 80, 8, 64


def write_dataset(root):
    """80 + 8 PNG images (64x64, noisy background, one filled rectangle) with one YOLO box each."""
    import cv2

    rng = np.random.default_rng(7)
    for split, n in (("train", N_TRAIN), ("val", N_VAL)):
        os.makedirs(os.path.join(root, "images", split))
        os.makedirs(os.path.join(root, "labels", split))
        for k in range(n):
            img = rng.integers(0, 256, (SIZE, SIZE, 3), dtype=np.uint8)
            w, h = (int(v) for v in rng.integers(12, 40, 2))
            x0, y0 = int(rng.integers(0, SIZE - w)), int(rng.integers(0, SIZE - h))
            img[y0 : y0 + h, x0 : x0 + w] = [int(v) for v in rng.integers(0, 256, 3)]
            cv2.imwrite(os.path.join(root, "images", split, f"{k:03d}.png"), img)
            with open(os.path.join(root, "labels", split, f"{k:03d}.txt"), "w") as f:
                f.write(f"0 {(x0 + w / 2) / SIZE:.6f} {(y0 + h / 2) / SIZE:.6f} {w / SIZE:.6f} {h / SIZE:.6f}\n")
    yaml = os.path.join(root, "data.yaml")
    with open(yaml, "w") as f:
        f.write(f"path: {root}\ntrain: images/train\nval: images/val\nnames:\n  0: box\n")
    return yaml


class Recorder:
    """Callbacks that read the trainer's state; they change nothing the schedule depends on (the one
    exception is case e's one simulated out-of-memory error, which makes the trainer take its own
    first-epoch retry path)."""

    def __init__(self, oom_at=None):
        self.rows = []  # per iteration: (epoch, i, lr[], momentum[], accumulate, stepped)
        self.passes = []  # per epoch pass: (epoch, mosaic on, mosaic p, batch size, nb, nw, accumulate_nominal)
        self.epoch_end_lr = []
        self.i = 0
        self.stepped = False
        self.start = {}
        self.oom_at = oom_at
        self.close_events = []  # [epoch, Mosaic p before closing] per _close_dataloader_mosaic call

    def on_train_start(self, trainer):
        nb = len(trainer.train_loader)
        self.start = {
            "nb": nb,
            "nw": trainer._get_warmup_iterations(nb),
            "accumulate_nominal": trainer.accumulate,
            "optimizer": type(trainer.optimizer).__name__,
            "groups": [
                {
                    "name": g.get("param_group", ""),
                    "initial_lr": g["initial_lr"],
                    "weight_decay": g.get("weight_decay", 0.0),
                    "params": len(g["params"]),
                    "nesterov": bool(g.get("nesterov", False)),
                }
                for g in trainer.optimizer.param_groups
            ],
        }
        step = trainer.optimizer_step

        def optimizer_step():
            self.stepped = True
            step()

        trainer.optimizer_step = optimizer_step
        close = trainer._close_dataloader_mosaic

        def close_dataloader_mosaic():  # the Mosaic p it finds, i.e. whether the current loader had mosaic on
            self.close_events.append([trainer.epoch, _mosaic_p(trainer)])
            close()

        trainer._close_dataloader_mosaic = close_dataloader_mosaic

    def on_train_epoch_start(self, trainer):
        self.i = 0
        self.stepped = False

    def on_train_batch_start(self, trainer):
        if self.i == 0:  # the close_mosaic check of this pass has run by now
            p = _mosaic_p(trainer)
            nb = len(trainer.train_loader)
            self.passes.append((trainer.epoch, p > 0, p,
                                trainer.batch_size, nb, trainer._get_warmup_iterations(nb), trainer.accumulate))
        if self.oom_at == (trainer.epoch, self.i):
            self.oom_at = None
            model = trainer.model

            def forward(*args, **kwargs):
                del model.forward  # once
                raise RuntimeError("out of memory (simulated by gen_schedule.py)")

            model.forward = forward

    def on_train_batch_end(self, trainer):
        groups = trainer.optimizer.param_groups
        lr = [float(g["lr"]) for g in groups]
        mom = [float(g["momentum"]) if "momentum" in g else float(g["betas"][0]) for g in groups]
        self.rows.append((trainer.epoch, self.i, lr, mom, int(trainer.accumulate), self.stepped))
        self.stepped = False
        self.i += 1

    def on_train_epoch_end(self, trainer):
        self.epoch_end_lr.append([float(trainer.lr[f"lr/pg{k}"]) for k in range(len(trainer.lr))])


def _mosaic_p(trainer):
    from ultralytics.data.augment import Mosaic

    ps = [t.p for t in _flat(trainer.train_loader.dataset.transforms) if isinstance(t, Mosaic)]
    return float(ps[0]) if ps else -1.0


def _flat(compose):
    out = []
    for t in getattr(compose, "transforms", [compose]):
        out.extend(_flat(t) if hasattr(t, "transforms") else [t])
    return out


def run_case(name, settings, data_yaml, project):
    import ultralytics.utils.torch_utils as tu
    from ultralytics.models.yolo.detect import DetectionTrainer

    overrides = {**COMMON, **settings, "data": data_yaml, "project": project, "name": name}
    threads = tu.NUM_THREADS
    tu.NUM_THREADS = 1  # select_device('cpu') would set torch to min(8, cpus - 1) threads
    try:
        trainer = DetectionTrainer(overrides=overrides)
        rec = Recorder(OOM_AT.get(name))
        for event in ("on_train_start", "on_train_epoch_start", "on_train_batch_start", "on_train_batch_end",
                      "on_train_epoch_end"):
            trainer.add_callback(event, getattr(rec, event))
        trainer.train()
    finally:
        tu.NUM_THREADS = threads
        common.setup_torch()  # the trainer unsets deterministic mode when it ends
    csv_lr = []
    with open(os.path.join(trainer.save_dir, "results.csv")) as f:
        header = [h.strip() for h in f.readline().split(",")]
        cols = [k for k, h in enumerate(header) if h.startswith("lr/pg")]
        for line in f:
            vals = line.strip().split(",")
            csv_lr.append([vals[k].strip() for k in cols])
    args = trainer.args
    after = {"optimizer": args.optimizer, "lr0": args.lr0, "momentum": args.momentum,
             "warmup_bias_lr": args.warmup_bias_lr}
    return rec, csv_lr, after, overrides


def generate(out_dir):
    import torch

    tensors, meta = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        data_yaml = write_dataset(os.path.join(tmp, "data"))
        for name, settings in CASES.items():
            rec, csv_lr, after, overrides = run_case(name, settings, data_yaml, os.path.join(tmp, "runs"))
            iters = len(rec.rows)
            tensors[f"{name}.epoch"] = torch.tensor([r[0] for r in rec.rows], dtype=torch.int64)
            tensors[f"{name}.i"] = torch.tensor([r[1] for r in rec.rows], dtype=torch.int64)
            tensors[f"{name}.lr"] = torch.tensor([r[2] for r in rec.rows], dtype=torch.float64)
            tensors[f"{name}.momentum"] = torch.tensor([r[3] for r in rec.rows], dtype=torch.float64)
            tensors[f"{name}.accumulate"] = torch.tensor([r[4] for r in rec.rows], dtype=torch.int64)
            tensors[f"{name}.stepped"] = torch.tensor([r[5] for r in rec.rows], dtype=torch.bool)
            tensors[f"{name}.epoch_mosaic"] = torch.tensor([p[1] for p in rec.passes], dtype=torch.bool)
            tensors[f"{name}.epoch_mosaic_p"] = torch.tensor([p[2] for p in rec.passes], dtype=torch.float64)
            tensors[f"{name}.epoch_end_lr"] = torch.tensor(rec.epoch_end_lr, dtype=torch.float64)
            tensors[f"{name}.pass_epoch"] = torch.tensor([p[0] for p in rec.passes], dtype=torch.int64)
            tensors[f"{name}.pass_batch"] = torch.tensor([p[3] for p in rec.passes], dtype=torch.int64)
            tensors[f"{name}.pass_nb"] = torch.tensor([p[4] for p in rec.passes], dtype=torch.int64)
            tensors[f"{name}.pass_nw"] = torch.tensor([p[5] for p in rec.passes], dtype=torch.int64)
            tensors[f"{name}.pass_accumulate_start"] = torch.tensor([p[6] for p in rec.passes], dtype=torch.int64)
            nb = rec.start["nb"]
            if name not in OOM_AT:
                assert [r[0] * nb + r[1] for r in rec.rows] == list(range(iters)), "iterations out of order"
                assert [p[0] for p in rec.passes] == list(range(len(rec.epoch_end_lr)))
            meta.update({
                f"{name}.settings": {k: v for k, v in overrides.items() if k not in ("data", "project", "name")},
                f"{name}.nb": nb,
                f"{name}.nw": rec.start["nw"],
                f"{name}.iters": iters,
                f"{name}.epochs": len(rec.epoch_end_lr),
                f"{name}.optimizer": rec.start["optimizer"],
                f"{name}.args_after": after,
                f"{name}.groups": rec.start["groups"],
                f"{name}.momentum_key": "momentum" if rec.start["optimizer"] in ("SGD", "MuSGD") else "betas[0]",
                f"{name}.weight_decay_scaled": next(g["weight_decay"] for g in rec.start["groups"]
                                                    if g["name"] in ("weight", "muon")),
                f"{name}.accumulate_nominal": rec.start["accumulate_nominal"],
                f"{name}.results_csv_lr": csv_lr,
                f"{name}.close_mosaic_calls": rec.close_events,
                f"{name}.simulated_oom_at": list(OOM_AT[name]) if name in OOM_AT else None,
            })
    meta = common.provenance(
        dataset=f"synthetic: {N_TRAIN} train + {N_VAL} val PNG {SIZE}x{SIZE}, one box each, numpy default_rng(7)",
        model="yolo26n.yaml (nc 1), DetectionTrainer defaults otherwise",
        recorded_at="lr/momentum/accumulate/stepped: on_train_batch_end; mosaic: on_train_batch_start of i=0; "
        "epoch_end_lr: on_train_epoch_end (trainer.lr)",
        **meta,
    )
    common.write_safetensors(os.path.join(out_dir, "schedule.safetensors"), tensors, meta)
