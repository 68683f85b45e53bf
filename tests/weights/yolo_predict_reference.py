"""The reference side of tests/weights/test_pt_predict.cpp's branch cases (Ultralytics 8.4.190, CPU).

    yolo_predict_reference.py --model X.pt --source DIR --imgsz 160 --conf 0.25 --max-det 300 \
        [--nms false] [--agnostic] --out FILE

`YOLO(X).predict(DIR, ...)` as a user calls it, with nms=False when --nms false is given (the
predictor then runs an end-to-end model's NMS-free one-to-one head; without it, the one-to-many
branch and NMS), and agnostic_nms=True with --agnostic. Writes FILE: per photo {"file", "boxes" (xyxy px), "scores", "classes" (,
"keypoints" [N, K, 3])}, the layout of tests/golden/pt_corpus.py's <file>.predict.json.
"""

import argparse
import json
import os


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--source", required=True, help="a folder: one photo per batch, as `yolo predict`")
    parser.add_argument("--imgsz", type=int, required=True)
    parser.add_argument("--conf", type=float, required=True)
    parser.add_argument("--max-det", type=int, default=300)
    parser.add_argument("--nms", choices=["default", "false"], default="default")
    parser.add_argument("--agnostic", action="store_true", help="agnostic_nms=True")
    parser.add_argument("--out", required=True)
    a = parser.parse_args()

    import torch
    from ultralytics import YOLO

    torch.set_num_threads(1)  # as the corpus's references were made
    extra = {"nms": False} if a.nms == "false" else {}
    if a.agnostic:
        extra["agnostic_nms"] = True
    preds = []
    for r in YOLO(a.model).predict(a.source, imgsz=a.imgsz, conf=a.conf, max_det=a.max_det, device="cpu",
                                   verbose=False, stream=True, **extra):
        item = {"file": os.path.basename(r.path), "boxes": r.boxes.xyxy.tolist(), "scores": r.boxes.conf.tolist(),
                "classes": [int(c) for c in r.boxes.cls.tolist()]}
        if r.keypoints is not None and r.keypoints.data.numel():
            item["keypoints"] = r.keypoints.data.tolist()
        preds.append(item)
    with open(a.out, "w") as f:
        json.dump(preds, f)


if __name__ == "__main__":
    main()
