"""The reference side of tests/infer/test_val_parity.cpp (Ultralytics 8.4.190, CPU).

    yolo_val_reference.py val   --model X.pt --data data.yaml --imgsz 320 --batch 16 --out DIR
        `yolo val` as a user runs it (YOLO(X).val: rect batches, conf 0.001, iou 0.7, save_json);
        leaves DIR/predictions.json.
    yolo_val_reference.py score --gt instances_val.json --pred A.json --class-base 0 --iou bbox
        the stats of a predictions file against COCO's own annotation file, through hotcoco's
        pycocotools-compatible COCOeval; class ids of a YOLO-format set (class index + class-base)
        are mapped to COCO's ids (the 80 categories in id order). Prints a JSON list of stats.
    yolo_val_reference.py rect  --sizes 640x480,... --batch 16 --imgsz 640 --stride 32
        8.4.190's BaseDataset.set_rectangle on images of those sizes (w x h): prints per image
        (in the given order) its batch shape [h, w] as JSON.
"""

import argparse
import contextlib
import io
import json
import os
import shutil
import sys


def val(a):
    import functools

    from ultralytics import YOLO
    from ultralytics.utils import nms

    # NMS gives up after 2 s + 0.05 s per image (a wall-clock limit, "NMS time limit exceeded"),
    # keeping only what it had: on a loaded 2-core machine the weak fixture's many candidates at
    # conf 0.001 hit it and the output depends on the load. The limit is lifted here so the
    # reference is what yolo val gives on a fast machine; nothing else in NMS changes.
    nms.non_max_suppression = functools.partial(nms.non_max_suppression, max_time_img=1e6)
    YOLO(a.model).val(data=a.data, imgsz=a.imgsz, batch=a.batch, conf=0.001, iou=0.7, save_json=True,
                      device="cpu", project=a.out, name="ref", exist_ok=True, plots=False, workers=0,
                      verbose=False)
    shutil.copy(os.path.join(a.out, "ref", "predictions.json"), os.path.join(a.out, "predictions.json"))


def score(a):
    from hotcoco import COCO, COCOeval

    with open(a.gt) as f:
        cats = sorted(c["id"] for c in json.load(f)["categories"])
    with open(a.pred) as f:
        preds = json.load(f)
    for p in preds:
        p["category_id"] = cats[p["category_id"] - a.class_base]
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(a.gt)
        dt = gt.loadRes(preds) if preds else None
        if dt is None:
            print(json.dumps([]))
            return
        e = COCOeval(gt, dt, a.iou)
        e.evaluate()
        e.accumulate()
        e.summarize()
    print(json.dumps([float(s) for s in e.stats]))


def rect(a):
    from ultralytics.data.base import BaseDataset

    sizes = [tuple(int(v) for v in s.split("x")) for s in a.sizes.split(",")]
    ds = BaseDataset.__new__(BaseDataset)  # only what set_rectangle reads
    ds.ni, ds.batch_size, ds.imgsz, ds.stride, ds.pad = len(sizes), a.batch, a.imgsz, a.stride, 0.5
    ds.im_files = [str(i) for i in range(len(sizes))]
    ds.labels = [{"shape": (h, w), "index": i} for i, (w, h) in enumerate(sizes)]
    ds.set_rectangle()
    shape_of = {}
    for pos, label in enumerate(ds.labels):
        shape_of[label["index"]] = [int(v) for v in ds.batch_shapes[ds.batch[pos]]]
    print(json.dumps([shape_of[i] for i in range(len(sizes))]))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["val", "score", "rect"])
    p.add_argument("--model")
    p.add_argument("--data")
    p.add_argument("--imgsz", type=int, default=640)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--stride", type=int, default=32)
    p.add_argument("--out")
    p.add_argument("--gt")
    p.add_argument("--pred")
    p.add_argument("--class-base", type=int, default=0)
    p.add_argument("--iou", default="bbox")
    p.add_argument("--sizes")
    a = p.parse_args()
    {"val": val, "score": score, "rect": rect}[a.mode](a)


if __name__ == "__main__":
    sys.exit(main())
