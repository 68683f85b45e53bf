#!/usr/bin/env python3
"""Measures the reference's training chain per sample on the same images, for
`detrain bench loader --reference-ms`.

Needs an environment with ultralytics (and its torch and cv2), e.g. a venv outside the project:
    python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install ultralytics
    /tmp/refvenv/bin/python scripts/reference_loader_ms.py --data ../shared/data/coco-mini

It writes the split's COCO boxes as YOLO labels into a temporary copy of the layout the reference
reads (images linked, not copied), builds the reference's training dataset (mosaic, random
perspective, mixup as configured, HSV, flips) at --imgsz, and times every sample of --repeats
passes (each with a fresh dataset, so every image is decoded as in a new epoch) plus the collate
of each batch of --batch, in this one process (the reference's loader worker is one such
process). Prints the best pass's CPU milliseconds per sample.
"""
import argparse
import json
import os
import random
import tempfile
import time


def write_yolo_layout(root, split_json, images_dir, out):
    with open(split_json) as f:
        coco = json.load(f)
    categories = sorted(c["id"] for c in coco["categories"])
    index = {cid: i for i, cid in enumerate(categories)}
    os.makedirs(os.path.join(out, "images", "train"))
    os.makedirs(os.path.join(out, "labels", "train"))
    by_image = {}
    for a in coco["annotations"]:
        if not a.get("iscrowd", 0):
            by_image.setdefault(a["image_id"], []).append(a)
    for image in coco["images"]:
        name = image["file_name"]
        os.symlink(os.path.join(root, images_dir, name), os.path.join(out, "images", "train", name))
        w, h = image["width"], image["height"]
        lines = []
        for a in by_image.get(image["id"], []):
            x, y, bw, bh = a["bbox"]
            if bw <= 0 or bh <= 0:
                continue
            lines.append("%d %.6f %.6f %.6f %.6f" % (index[a["category_id"]], (x + bw / 2) / w,
                                                     (y + bh / 2) / h, bw / w, bh / h))
        stem = os.path.splitext(name)[0]
        with open(os.path.join(out, "labels", "train", stem + ".txt"), "w") as f:
            f.write("\n".join(lines))
    return {i: "class%d" % cid for i, cid in enumerate(categories)}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="data set folder (annotations/, images/)")
    p.add_argument("--annotations", default="annotations/instances_train.json")
    p.add_argument("--images", default="images")
    p.add_argument("--imgsz", type=int, default=640)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()

    import cv2
    from ultralytics.cfg import get_cfg
    from ultralytics.data.build import build_yolo_dataset
    from ultralytics.data.dataset import YOLODataset
    from ultralytics.utils import DEFAULT_CFG

    cv2.setNumThreads(0)  # the reference's loader workers run OpenCV single-threaded
    with tempfile.TemporaryDirectory() as tmp:
        names = write_yolo_layout(args.data, os.path.join(args.data, args.annotations),
                                  args.images, tmp)
        data = {"names": names, "nc": len(names), "channels": 3}
        cfg = get_cfg(DEFAULT_CFG, {"imgsz": args.imgsz, "cache": False})
        best = float("inf")
        for r in range(args.repeats):
            # A fresh dataset per pass: its buffer of recent decoded images (all of a small
            # set) would otherwise leave later passes without decoding, unlike a new epoch's
            # loader workers on a real data set.
            ds = build_yolo_dataset(cfg, os.path.join(tmp, "images", "train"), args.batch, data,
                                    mode="train")
            n = len(ds)
            order = list(range(n))
            random.Random(r).shuffle(order)
            start = time.process_time()
            batch = []
            for i in order:
                batch.append(ds[i])
                if len(batch) == args.batch:
                    YOLODataset.collate_fn(batch)
                    batch = []
            best = min(best, (time.process_time() - start) * 1e3 / n)
        print("reference chain + collate: %.2f ms CPU per sample (%d images at %d px, best of %d)"
              % (best, n, args.imgsz, args.repeats))


if __name__ == "__main__":
    main()
