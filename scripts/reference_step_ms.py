#!/usr/bin/env python3
"""Times the reference trainer's optimizer step on synthetic batches, for comparing with
`detrain bench step` on the same CPU in the same session (docs/perf/, issue 44).

Needs an environment with ultralytics (the reference, 8.4.190) and its torch, e.g.
    .venv-ref/bin/python scripts/reference_step_ms.py --model yolo26n --imgsz 640 --batch 4

One step is what BaseTrainer does per iteration with accumulate=1: autocast (bf16 when asked,
off otherwise: the reference turns AMP off on CPU), the model's own loss on the batch,
backward, clip_grad_norm_(10), optimizer.step, zero_grad and the EMA update. The optimizer is
built by the reference's own BaseTrainer.build_optimizer (SGD or MuSGD, nesterov, momentum
0.937, decay 5e-4). Batches are random images in [0, 1] with --boxes random boxes each (fixed
seed), so the numbers say nothing about accuracy. Modes: fp32 (the reference's CPU default),
fp32-cl (channels-last model and input), bf16 (amp='bf16'), bf16-cl. Prints one JSON line per
mode and optimizer: median, min, max milliseconds of --steps steps after --warmup.
"""
import argparse
import json
import statistics
import time
import types


def build(model_name, nc):
    from ultralytics.cfg import get_cfg
    from ultralytics.nn.tasks import DetectionModel, PoseModel

    pose = "-pose" in model_name
    # "yolo26n.yaml" resolves to the reference's yolo26.yaml at scale n (its own name rule).
    model = (PoseModel if pose else DetectionModel)(f"{model_name}.yaml", nc=nc, verbose=False)
    model.args = get_cfg()
    return model, pose


def synthetic_batch(torch, batch, imgsz, boxes, pose, generator):
    n = batch * boxes
    xy = torch.rand(n, 2, generator=generator) * 0.6 + 0.2
    wh = torch.rand(n, 2, generator=generator) * 0.3 + 0.05
    out = {
        "img": torch.rand(batch, 3, imgsz, imgsz, generator=generator),
        "batch_idx": torch.arange(batch).repeat_interleave(boxes).float(),
        "cls": torch.zeros(n, 1),
        "bboxes": torch.cat([xy, wh], 1),
    }
    if pose:
        kpts = xy[:, None, :] + (torch.rand(n, 17, 2, generator=generator) - 0.5) * wh[:, None, :]
        out["keypoints"] = torch.cat([kpts, torch.full((n, 17, 1), 2.0)], 2)
    return out


def time_mode(args, mode, optimizer_name):
    import torch
    from ultralytics.engine.trainer import BaseTrainer
    from ultralytics.utils.torch_utils import ModelEMA

    torch.manual_seed(0)
    model, pose = build(args.model, args.nc)
    model.train()
    channels_last = mode.endswith("-cl")
    bf16 = mode.startswith("bf16")
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    fake = types.SimpleNamespace(args=model.args, data={"nc": args.nc})
    optimizer = BaseTrainer.build_optimizer(
        fake, model, name=optimizer_name, lr=0.01, momentum=0.937, decay=5e-4
    )
    ema = ModelEMA(model)
    generator = torch.Generator().manual_seed(0)
    batches = [synthetic_batch(torch, args.batch, args.imgsz, args.boxes, pose, generator) for _ in range(2)]
    if channels_last:
        for b in batches:
            b["img"] = b["img"].contiguous(memory_format=torch.channels_last)
    times = []
    for i in range(args.warmup + args.steps):
        batch = batches[i % len(batches)]
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss, _ = model(batch)
            loss = loss.sum()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=10.0)
        optimizer.step()
        optimizer.zero_grad()
        ema.update(model)
        if i >= args.warmup:
            times.append(1e3 * (time.perf_counter() - t0))
    return {
        "tool": "ultralytics",
        "model": args.model,
        "imgsz": args.imgsz,
        "batch": args.batch,
        "mode": mode,
        "optimizer": optimizer_name,
        "threads": torch.get_num_threads(),
        "median_ms": round(statistics.median(times), 1),
        "min_ms": round(min(times), 1),
        "max_ms": round(max(times), 1),
        "steps": len(times),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="yolo26n", help="yolo26n, yolo11n, yolo11n-pose, yolov8s, ...")
    p.add_argument("--imgsz", type=int, default=640)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--boxes", type=int, default=8, help="random boxes per image")
    p.add_argument("--nc", type=int, default=80)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--modes", default="fp32,bf16-cl", help="of fp32, fp32-cl, bf16, bf16-cl")
    p.add_argument("--optimizers", default="SGD,MuSGD")
    args = p.parse_args()
    if "-pose" in args.model:
        args.nc = 1
    for optimizer_name in args.optimizers.split(","):
        for mode in args.modes.split(","):
            print(json.dumps(time_mode(args, mode, optimizer_name)), flush=True)


if __name__ == "__main__":
    main()
