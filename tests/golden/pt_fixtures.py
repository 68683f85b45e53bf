"""Ultralytics .pt fixtures for detrain's .pt reader, made with the pinned reference (ultralytics 8.4.190).

    .venv-ref/bin/python tests/golden/pt_fixtures.py --out build/pt-fixtures --data ../shared/data

Writes, under --out:
  coco-mini-yolo/          a YOLO-format copy of coco-mini made by ultralytics.data.converter.convert_coco
                           (images linked, labels/{train,val}/*.txt, detect.yaml and pose.yaml data files)
  <name>-random.pt         YOLO("<name>.yaml").save(...): random initialisation, as Model.save writes it
  <name>-trained/last.pt   one Ultralytics training epoch on coco-mini-yolo: last.pt (EMA, optimizer) and the
  <name>-trained/best.pt   stripped best.pt, exactly as the trainer leaves them
  <name>-trained/epoch.pt  for yolo11n and yolo26n-pose: last.pt as the epoch's save wrote it, before the
                           trainer's final strip (model None, ema set, optimizer kept): a run in progress
  <file>.state.safetensors the reference's own reading of each file: torch.load + (ema or model).float().state_dict()
  <file>.forward.safetensors the eval-mode raw head outputs of that model on a fixed 1x3x160x224 input
  yolo11n-predict/last.pt  YOLO11n trained (500 epochs, 128 px) on 4 coco-mini val photos until it finds
                           objects, and last.pt.predict.json: YOLO(last.pt).predict on the 48 val photos
                           (the settings are its MANIFEST entry's "predict")
  yolo11n-pose-predict/last.pt  the same for YOLO11n-pose on the first 4 photos of the pose split's val
  MANIFEST.json            every file with its model, task, nc, names and scale
Nothing here is committed: the data are coco-mini's (see README's data rules).
"""

import argparse
import json
import os
import shutil
import sys
import time

import numpy as np
import torch

RANDOM = ["yolov8n", "yolov8n-pose", "yolo11n", "yolo11n-pose", "yolo26n", "yolo26n-pose", "yolo11s"]
TRAINED = ["yolov8n", "yolov8n-pose", "yolo11n", "yolo11n-pose", "yolo26n", "yolo26n-pose"]
UNSTRIPPED = ["yolo11n", "yolo26n-pose"]  # also keep the epoch's last.pt before the final strip
INPUT_SHAPE = (1, 3, 160, 224)  # not square: the anchors' row-major order is tested too
# The predict fixture: a one-epoch model finds nothing (no score reaches 0.02), so one model is
# overfitted on a few photos; at 128 px and conf 0.05 it gives ~200 boxes on 12 of the 48 photos,
# with scores spread over 0.06-1.
PREDICT = {"imgsz": 128, "conf": 0.05}
PREDICT_TRAIN = {"epochs": 500, "imgsz": 128, "batch": 4, "optimizer": "SGD", "lr0": 0.02, "mosaic": 0.0,
                 "close_mosaic": 0, "warmup_epochs": 1, "val": False}
PREDICT_PHOTOS = 4


def yolo_copy(data_root, out):
    """coco-mini as an Ultralytics user has it: convert_coco labels plus the images in images/{train,val}."""
    from ultralytics.data.converter import convert_coco

    root = os.path.join(out, "coco-mini-yolo")
    if os.path.exists(os.path.join(root, "pose.yaml")):
        return root
    shutil.rmtree(root, ignore_errors=True)
    src = os.path.join(data_root, "coco-mini")
    if not os.path.isdir(os.path.join(src, "annotations")):
        sys.exit(f"pt fixtures: {src} not found; set DETRAIN_DATA (the shared data root) and build again")
    for kind, prefix, kpts in (("detect", "instances_", False), ("pose", "person_keypoints_", True)):
        tmp_ann = os.path.join(out, f"ann-{kind}")
        os.makedirs(tmp_ann, exist_ok=True)
        for split in ("train", "val"):
            shutil.copy(os.path.join(src, "annotations", f"{prefix}{split}.json"), os.path.join(tmp_ann, f"{prefix}{split}.json"))
        conv = os.path.join(out, f"conv-{kind}")
        shutil.rmtree(conv, ignore_errors=True)
        convert_coco(labels_dir=tmp_ann, save_dir=conv, use_keypoints=kpts, cls91to80=True)
        for split in ("train", "val"):
            # convert_coco names the folder after the JSON ("instances_" dropped): labels/train, or for the
            # keypoint files labels/person_keypoints_train
            made = os.path.join(conv, "labels", f"{prefix}{split}".replace("instances_", ""))
            shutil.copytree(made, os.path.join(root, kind, "labels", split))
            os.makedirs(os.path.join(root, kind, "images", split), exist_ok=True)
            with open(os.path.join(src, "annotations", f"{prefix}{split}.json")) as f:
                images = json.load(f)["images"]
            for im in images:
                link = os.path.join(root, kind, "images", split, im["file_name"])
                if not os.path.exists(link):
                    os.symlink(os.path.abspath(os.path.join(src, "images", im["file_name"])), link)
        shutil.rmtree(conv)
        shutil.rmtree(tmp_ann)
    with open(os.path.join(src, "annotations", "instances_val.json")) as f:
        cats = json.load(f)["categories"]
    names = "\n".join(f"  {i}: {c['name']}" for i, c in enumerate(sorted(cats, key=lambda c: c["id"])))
    with open(os.path.join(root, "detect.yaml"), "w") as f:
        f.write(f"path: {os.path.join(root, 'detect')}\ntrain: images/train\nval: images/val\nnames:\n{names}\n")
    with open(os.path.join(root, "pose.yaml"), "w") as f:
        f.write(
            f"path: {os.path.join(root, 'pose')}\ntrain: images/train\nval: images/val\n"
            "kpt_shape: [17, 3]\nflip_idx: [0, 2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 16, 15]\n"
            "names:\n  0: person\n"
        )
    return root


def reference_outputs(path, out_prefix, val_images=None):
    from safetensors.torch import save_file
    from ultralytics import YOLO

    ckpt = torch.load(path, map_location="cpu", weights_only=False)
    model = (ckpt.get("ema") or ckpt["model"]).float().eval()
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, out_prefix + ".state.safetensors")
    head = model.model[-1]
    g = torch.Generator().manual_seed(7)
    x = torch.rand(INPUT_SHAPE, generator=g)
    head.training = True  # the head returns its raw branches; every BatchNorm stays in eval mode
    with torch.no_grad():
        raw = model(x)
    head.training = False
    tensors = {"input": x}
    branches = raw.items() if isinstance(raw, dict) and "one2many" in raw else [("one2many", raw)]
    for branch, preds in branches:
        if isinstance(preds, dict):
            for k, v in preds.items():
                if isinstance(v, torch.Tensor):
                    tensors[f"{branch}.{k}"] = v.contiguous()
    save_file(tensors, out_prefix + ".forward.safetensors")

    if val_images is None:
        return model
    # The folder as source, as `yolo predict source=DIR` runs: one image per batch, so each gets the
    # minimal-padding letterbox (a Python list of paths is letterboxed to imgsz x imgsz instead).
    results = YOLO(path).predict(os.path.dirname(val_images[0]), imgsz=PREDICT["imgsz"], conf=PREDICT["conf"],
                                 device="cpu", verbose=False, stream=True)
    preds = []
    for r in results:
        item = {"file": os.path.basename(r.path), "boxes": r.boxes.xyxy.tolist(), "scores": r.boxes.conf.tolist(),
                "classes": [int(c) for c in r.boxes.cls.tolist()]}
        if r.keypoints is not None and r.keypoints.data.numel():
            item["keypoints"] = r.keypoints.data.tolist()
        preds.append(item)
    with open(out_prefix + ".predict.json", "w") as f:
        json.dump(preds, f)
    return model


def predict_fixture(out, root, kind, record, manifest):
    """<model>-predict/last.pt (yolo11n-predict for detect, yolo11n-pose-predict for pose): overfitted on the first
    photos of the kind's val split so that predict and val score decisively (a one-epoch model's scores are
    image-independent: equal boxes tie and each sort keeps its own)."""
    from ultralytics import YOLO

    start = time.perf_counter()
    model_name = "yolo11n-pose" if kind == "pose" else "yolo11n"
    name = f"{model_name}-predict"
    val_dir = os.path.join(root, kind, "images", "val")
    val_images = sorted(os.path.join(val_dir, f) for f in os.listdir(val_dir))
    tiny = os.path.join(out, f"tiny-{kind}")
    shutil.rmtree(tiny, ignore_errors=True)
    for sub in ("images", "labels"):
        os.makedirs(os.path.join(tiny, sub, "train"))
    labels = os.path.join(root, kind, "labels", "val")
    stem_of = lambda image: os.path.splitext(os.path.basename(image))[0]  # noqa: E731
    labelled = [i for i in val_images if os.path.exists(os.path.join(labels, stem_of(i) + ".txt"))]
    for image in labelled[:PREDICT_PHOTOS]:  # the pose split's photos without people have no label file
        stem = stem_of(image)
        os.symlink(os.path.realpath(image), os.path.join(tiny, "images", "train", os.path.basename(image)))
        shutil.copy(os.path.join(labels, stem + ".txt"), os.path.join(tiny, "labels", "train"))
    # The kind's own data YAML (names, and kpt_shape / flip_idx for pose) on the tiny split.
    with open(os.path.join(root, f"{kind}.yaml")) as f:
        rest = [line for line in f.read().splitlines() if not line.startswith(("path:", "train:", "val:"))]
    with open(os.path.join(tiny, "data.yaml"), "w") as f:
        f.write("\n".join([f"path: {tiny}", "train: images/train", "val: images/train", *rest]) + "\n")
    run = os.path.join(out, "runs", name)
    shutil.rmtree(run, ignore_errors=True)
    torch.manual_seed(0)
    YOLO(f"{model_name}.yaml").train(data=os.path.join(tiny, "data.yaml"), workers=0, device="cpu", plots=False,
                                     amp=False, project=os.path.join(out, "runs"), name=name, exist_ok=True,
                                     verbose=False, seed=0, deterministic=False, **PREDICT_TRAIN)
    dst = os.path.join(out, name)
    os.makedirs(dst, exist_ok=True)
    shutil.copy(os.path.join(run, "weights", "last.pt"), os.path.join(dst, "last.pt"))
    file = f"{name}/last.pt"
    record(file, model_name, reference_outputs(os.path.join(dst, "last.pt"), os.path.join(dst, "last.pt"),
                                               val_images))
    manifest[file]["predict"] = PREDICT
    print(f"pt fixtures: {file} in {time.perf_counter() - start:.1f} s", flush=True)


class NotAModel:  # pickled by reference as __main__.NotAModel: a class no model file names
    pass


def bad_files(out, good):
    """Files that must be refused with a clear error: another program's pickle, a torchvision model, a bare
    state dict, a truncated archive."""
    import torchvision

    torch.save({"model": NotAModel(), "ema": None}, os.path.join(out, "bad-unknown-class.pt"))
    torch.save(torchvision.models.resnet18(), os.path.join(out, "bad-torchvision.pt"))
    ckpt = torch.load(good, map_location="cpu", weights_only=False)
    torch.save(ckpt["model"].state_dict(), os.path.join(out, "bad-state-dict.pt"))
    data = open(good, "rb").read()
    with open(os.path.join(out, "bad-truncated.pt"), "wb") as f:
        f.write(data[: len(data) // 2])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--data", required=True, help="the shared data root (holds coco-mini/)")
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    from ultralytics import YOLO
    from ultralytics.utils import SETTINGS

    SETTINGS.update({"sync": False})  # no telemetry from a test build
    root = yolo_copy(os.path.abspath(args.data), out)
    manifest = {}

    def record(file, name, model):
        manifest[file] = {"model": name, "task": "pose" if "pose" in name else "detect", "nc": int(model.yaml["nc"]),
                          "scale": model.yaml.get("scale", ""), "names": [model.names[i] for i in range(len(model.names))]}

    for name in RANDOM:
        start = time.perf_counter()
        file = f"{name}-random.pt"
        torch.manual_seed(0)
        YOLO(f"{name}.yaml").save(os.path.join(out, file))
        record(file, name, reference_outputs(os.path.join(out, file), os.path.join(out, file)))
        print(f"pt fixtures: {file} in {time.perf_counter() - start:.1f} s", flush=True)
    for name in TRAINED:
        start = time.perf_counter()
        data = os.path.join(root, "pose.yaml" if "pose" in name else "detect.yaml")
        run = os.path.join(out, "runs", name)
        shutil.rmtree(run, ignore_errors=True)
        dst = os.path.join(out, f"{name}-trained")
        os.makedirs(dst, exist_ok=True)
        torch.manual_seed(0)
        model = YOLO(f"{name}.yaml")
        if name in UNSTRIPPED:
            # on_model_save runs right after the epoch's save, before final_eval strips the files.
            model.add_callback("on_model_save", lambda t, d=dst: shutil.copy(t.last, os.path.join(d, "epoch.pt")))
        model.train(data=data, epochs=1, imgsz=160, batch=16, workers=0, device="cpu", plots=False,
                                   amp=False, project=os.path.join(out, "runs"), name=name, exist_ok=True,
                                   verbose=False, seed=0, deterministic=False)
        for w in ("last.pt", "best.pt", "epoch.pt"):
            if w == "epoch.pt" and name not in UNSTRIPPED:
                continue
            if w != "epoch.pt":
                shutil.copy(os.path.join(run, "weights", w), os.path.join(dst, w))
            file = f"{name}-trained/{w}"
            record(file, name, reference_outputs(os.path.join(dst, w), os.path.join(dst, w)))
        print(f"pt fixtures: {name} trained in {time.perf_counter() - start:.1f} s", flush=True)
    for kind in ("detect", "pose"):
        predict_fixture(out, root, kind, record, manifest)
    bad_files(out, os.path.join(out, "yolo11n-random.pt"))
    with open(os.path.join(out, "MANIFEST.json.tmp"), "w") as f:
        json.dump(manifest, f, indent=1)
    os.replace(os.path.join(out, "MANIFEST.json.tmp"), os.path.join(out, "MANIFEST.json"))


if __name__ == "__main__":
    sys.exit(main())
