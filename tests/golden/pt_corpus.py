"""A corpus of Ultralytics .pt files written by every 8.x minor release, for detrain's .pt reader.

    .venv-ref/bin/python tests/golden/pt_corpus.py --out build/golden/pt-corpus --data ../shared/data \
        --wheels build/pt-wheels

Each release in RELEASES is installed next to the reference environment's torch 2.11, numpy and Python 3.11
with `pip install --no-deps --target <out>/site/<version>` from a wheel kept in --wheels (downloaded once; a
rebuild does not download again), plus the few packages the old releases import that the reference
environment lacks, or need older (DEPS). The release then runs as itself (PYTHONPATH=<site>, no patch; only the
environment variables in release_env) and writes, under <out>/<version>/:

  <model>-random.pt           YOLO("<yaml>").save(...) where the release has Model.save: random weights
  <model>/last.pt             one training epoch (imgsz 64, 8 photos made here from coco-mini; the head's class
                              convs spread first, see spread_scores): as the release leaves it
  <model>/best.pt             the stripped fp16 best.pt of that run, as the release's trainer writes it

The models (models_of): YOLOv8 in all releases, YOLO11 from 8.3, YOLO26 from 8.4; detect and pose; "official"
builds from the release's own <name>.yaml (the dict records `scale`) and "custom" ones from a YAML written here
with depth_multiple / width_multiple and no scales table (the dict records neither scale nor a shipped name).

Then the reference (Ultralytics 8.4.190, this interpreter) reads every file:
  <file>.state.safetensors / <file>.forward.safetensors   as tests/golden/pt_fixtures.py's reference_outputs
  <file>.predict.json         YOLO(<file>).predict on 16 coco-mini val photos (PREDICT settings), per photo
and MANIFEST.json lists every file with its release, model, task, nc, names, whether its pickle holds a
builtins.getattr reference, and the seconds each release took. Nothing here is committed (coco-mini data).
"""

import argparse
import json
import os
import pickletools
import shutil
import subprocess
import sys
import time
import zipfile

# One patch release of each minor that runs on torch 2.11 / Python 3.11 with no code change: 8.0.200 (the last
# 8.0, 8.0.239, imports hub-sdk at startup), 8.1.47 and 8.2.103 (the last of theirs), 8.3.253 (the
# last 8.3; 8.3.0's parse_model fails on a YOLO11 YAML without scales: its `scale` is unbound), 8.4.190 (the
# reference itself).
RELEASES = ["8.0.200", "8.1.47", "8.2.103", "8.3.253", "8.4.190"]
REFERENCE = "8.4.190"  # the pinned reference: this interpreter's own ultralytics, not installed again
# Imports of the old releases (pandas: their trainers write results with it) missing from the reference environment: exact pins.
DEPS = ["tqdm==4.67.1", "py-cpuinfo==9.0.0", "pandas==2.2.3", "pytz==2024.2", "six==1.16.0", "numpy==2.2.6"]
PHOTOS = 8
TRAIN = {"epochs": 1, "imgsz": 64, "batch": 8, "workers": 0, "device": "cpu", "plots": False, "amp": False,
         "verbose": False, "seed": 0, "deterministic": False, "exist_ok": True}
# predict on real photos at Ultralytics' default threshold (spread_scores makes one-epoch models find boxes).
PREDICT = {"imgsz": 160, "conf": 0.25, "max_det": 300}
PREDICT_PHOTOS = 16  # the first coco-mini val photos by name


def models_of(version):
    """(name, yaml, task, custom) trained by a release; the custom YAMLs are written by custom_yaml."""
    minor = tuple(int(x) for x in version.split(".")[:2])
    out = [("yolov8n", "yolov8n.yaml", "detect", False), ("yolov8-custom-pose", "yolov8-custom-pose.yaml", "pose", True)]
    if minor >= (8, 3):
        out += [("yolo11n-pose", "yolo11n-pose.yaml", "pose", False), ("yolo11-custom", "yolo11-custom.yaml", "detect", True)]
    if minor >= (8, 4):
        out += [("yolo26n-pose", "yolo26n-pose.yaml", "pose", False), ("yolo26-custom", "yolo26-custom.yaml", "detect", True)]
    return out


def custom_yaml(name, release_site):
    """A user's YAML: the release's own family YAML with its scales table replaced by depth_multiple and
    width_multiple (YOLOv8s's for v8, n's otherwise), nc 80 (the trainer sets the data's)."""
    import yaml

    family = {"yolov8-custom-pose": "v8/yolov8-pose.yaml", "yolo11-custom": "11/yolo11.yaml",
              "yolo26-custom": "26/yolo26.yaml"}[name]
    src = os.path.join(release_site, "ultralytics", "cfg", "models", family)
    with open(src) as f:
        d = yaml.safe_load(f)
    depth, width, _ = d.pop("scales")["s" if "v8" in name else "n"]
    d = {"nc": 80, "depth_multiple": depth, "width_multiple": width, **d}
    return yaml.safe_dump(d, sort_keys=False)


def make_data(data_root, out):
    """8 coco-mini photos (downscaled to 160 px) with detect labels and person keypoints labels."""
    import cv2

    root = os.path.join(out, "data")
    if os.path.exists(os.path.join(root, "pose.yaml")):
        return root
    shutil.rmtree(root, ignore_errors=True)
    src = os.path.join(data_root, "coco-mini")
    with open(os.path.join(src, "annotations", "instances_train.json")) as f:
        det = json.load(f)
    with open(os.path.join(src, "annotations", "person_keypoints_train.json")) as f:
        kpt = json.load(f)
    cats = sorted(c["id"] for c in det["categories"])
    names = {c["id"]: c["name"] for c in det["categories"]}
    persons = {a["image_id"] for a in kpt["annotations"] if a["num_keypoints"] > 0}
    images = [im for im in sorted(det["images"], key=lambda im: im["id"]) if im["id"] in persons][:PHOTOS]
    for kind, anns in (("detect", det["annotations"]), ("pose", kpt["annotations"])):
        for sub in ("images", "labels"):
            os.makedirs(os.path.join(root, kind, sub))
        for im in images:
            img = cv2.imread(os.path.join(src, "images", im["file_name"]))
            s = 160 / max(img.shape[:2])
            cv2.imwrite(os.path.join(root, kind, "images", im["file_name"]), cv2.resize(img, None, fx=s, fy=s))
            w, h = im["width"], im["height"]
            lines = []
            for a in anns:
                if a["image_id"] != im["id"] or a.get("iscrowd") or a["bbox"][2] < 1 or a["bbox"][3] < 1:
                    continue
                x, y, bw, bh = a["bbox"]
                row = [cats.index(a["category_id"]) if kind == "detect" else 0, (x + bw / 2) / w, (y + bh / 2) / h,
                       bw / w, bh / h]
                if kind == "pose":
                    if a["num_keypoints"] == 0:
                        continue
                    k = a["keypoints"]
                    for j in range(17):
                        row += [k[3 * j] / w, k[3 * j + 1] / h, k[3 * j + 2]]
                lines.append(" ".join(f"{v:.6g}" for v in row))
            with open(os.path.join(root, kind, "labels", os.path.splitext(im["file_name"])[0] + ".txt"), "w") as f:
                f.write("\n".join(lines) + "\n")
    det_names = "\n".join(f"  {i}: {names[c]}" for i, c in enumerate(cats))
    with open(os.path.join(root, "detect.yaml"), "w") as f:
        f.write(f"path: {root}/detect\ntrain: images\nval: images\nnames:\n{det_names}\n")
    with open(os.path.join(root, "pose.yaml"), "w") as f:
        f.write(f"path: {root}/pose\ntrain: images\nval: images\nkpt_shape: [17, 3]\n"
                "flip_idx: [0, 2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 16, 15]\nnames:\n  0: person\n")
    with open(os.path.join(src, "annotations", "instances_val.json")) as f:
        val = json.load(f)["images"]
    os.makedirs(os.path.join(root, "val-photos"))
    for im in sorted(val, key=lambda im: im["file_name"])[:PREDICT_PHOTOS]:
        os.symlink(os.path.join(src, "images", im["file_name"]), os.path.join(root, "val-photos", im["file_name"]))
    return root


def pip(*args):
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args], check=True)


def install(version, wheels, site):
    """The release (and DEPS, shared by all) from the wheel cache; pip downloads only what it lacks."""
    os.makedirs(wheels, exist_ok=True)
    done = os.path.join(site, ".installed")
    if os.path.exists(done):
        return
    need = [f"ultralytics=={version}"] + DEPS
    have = [w.lower() for w in os.listdir(wheels)]
    missing = [n for n in need if not any(w.startswith(n.lower().replace("-", "_").replace("==", "-") + "-")
                                          for w in have)]
    if missing:
        pip("download", "--no-deps", "-d", wheels, *missing)
    shutil.rmtree(site, ignore_errors=True)
    pip("install", "--no-deps", "--no-index", "--find-links", wheels, "--target", site, *need)
    open(done, "w").close()


def release_env(out, site):
    env = dict(os.environ)
    if site:
        env["PYTHONPATH"] = site
    env["YOLO_CONFIG_DIR"] = os.path.join(out, "settings")  # the releases' settings files stay in the build
    env["YOLO_OFFLINE"] = "1"
    env["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"  # releases before torch 2.6 call torch.load(file) unqualified
    env["OMP_NUM_THREADS"] = "1"
    return env


def spread_scores(trainer):
    """Before the epoch (a trainer callback, no change to the release's code): the class convs of the head, in
    the model and its EMA, scaled x10 and shifted +4, so that a one-epoch model scores boxes across (0, 1)
    instead of every score equal to the bias prior (1.6e-4 for 80 classes): predict's ranking all ties. An
    end-to-end head's one-to-one class convs (YOLO26's one2one_cv3, a copy of cv3 at start) too, shifted +5
    instead, so that nms=False ranks decisively and its scores differ from the one-to-many branch's."""
    import torch

    models = [trainer.model] + ([trainer.ema.ema] if getattr(trainer, "ema", None) else [])
    with torch.no_grad():
        for model in models:
            head = model.model[-1]
            for towers, shift in ((head.cv3, 4), (getattr(head, "one2one_cv3", None) or [], 5)):
                for tower in towers:
                    tower[-1].weight.mul_(10)
                    tower[-1].bias.add_(shift)


def worker(version, out, data):
    """Runs inside the release: trains its MODELS and saves the random ones."""
    import torch
    import ultralytics
    from ultralytics import YOLO

    assert ultralytics.__version__ == version, (ultralytics.__version__, version)
    torch.set_num_threads(1)
    site = os.path.dirname(os.path.dirname(ultralytics.__file__))
    dst = os.path.join(out, version)
    os.makedirs(dst, exist_ok=True)
    for name, cfg, task, custom in models_of(version):
        if custom:
            path = os.path.join(dst, cfg)
            with open(path, "w") as f:
                f.write(custom_yaml(name, site))
            cfg = path
        torch.manual_seed(0)
        if not custom:
            m = YOLO(cfg)
            try:
                m.save(os.path.join(dst, f"{name}-random.pt"))
            except (AttributeError, TypeError):  # 8.0 has no Model.save; 8.1 saves only a model loaded from a .pt
                pass
        torch.manual_seed(0)
        model = YOLO(cfg)
        model.add_callback("on_pretrain_routine_end", spread_scores)
        run = os.path.join(out, "runs", version)
        model.train(data=os.path.join(data, f"{task}.yaml"), project=run, name=name, **TRAIN)
        os.makedirs(os.path.join(dst, name), exist_ok=True)
        for w in ("last.pt", "best.pt"):
            shutil.copy(os.path.join(run, name, "weights", w), os.path.join(dst, name, w))


def names_getattr(path):
    """Whether the file's pickle REDUCEs builtins.getattr (protocol 2 streams of a nested function)."""
    with zipfile.ZipFile(path) as z:
        pkl = z.read(next(n for n in z.namelist() if n.endswith("data.pkl")))
    for op, arg, _ in pickletools.genops(pkl):
        if op.name == "GLOBAL" and arg in ("builtins getattr", "__builtin__ getattr"):
            return True
    return False


def reference_reads(out, manifest, val_dir):
    """8.4.190 reads each file: state, raw head outputs, and predict on the val photos."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch
    from pt_fixtures import reference_outputs
    from ultralytics import YOLO

    torch.set_num_threads(1)
    for file, entry in manifest.items():
        path = os.path.join(out, file)
        model = reference_outputs(path, path)
        entry.update({"nc": len(model.names), "names": [model.names[i] for i in range(len(model.names))],
                      "yaml_nc": int(model.yaml.get("nc", 0)), "scale": model.yaml.get("scale", ""),
                      "getattr": names_getattr(path), "predict": PREDICT})
        preds = []
        try:
            for r in YOLO(path).predict(val_dir, device="cpu", verbose=False, stream=True, **PREDICT):
                item = {"file": os.path.basename(r.path), "boxes": r.boxes.xyxy.tolist(),
                        "scores": r.boxes.conf.tolist(), "classes": [int(c) for c in r.boxes.cls.tolist()]}
                if r.keypoints is not None and r.keypoints.data.numel():
                    item["keypoints"] = r.keypoints.data.tolist()
                preds.append(item)
        except AttributeError as e:  # 8.3's Model.save of a random pose model lacks kpt_shape: 8.4.190 stops
            entry["predict_error"] = f"{type(e).__name__}: {e}"
            continue
        with open(path + ".predict.json", "w") as f:
            json.dump(preds, f)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--data", help="the shared data root (holds coco-mini/)")
    parser.add_argument("--wheels", help="the wheel cache (kept across rebuilds)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # a release's version: run inside it
    parser.add_argument("--only", nargs="*", help="these releases only (by hand)")
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    if args.worker:
        return worker(args.worker, out, os.path.join(out, "data"))
    start_all = time.perf_counter()
    src = os.path.join(os.path.abspath(args.data), "coco-mini")
    if not os.path.isdir(os.path.join(src, "annotations")):
        sys.exit(f"pt corpus: {src} not found; set DETRAIN_DATA (the shared data root) and build again")
    os.makedirs(out, exist_ok=True)
    make_data(os.path.abspath(args.data), out)
    wheels = os.path.abspath(args.wheels or os.path.join(out, "wheels"))
    manifest, seconds = {}, {}
    for version in args.only or RELEASES:
        start = time.perf_counter()
        site = ""
        if version != REFERENCE:
            site = os.path.join(out, "site", version)
            install(version, wheels, site)
        shutil.rmtree(os.path.join(out, version), ignore_errors=True)
        subprocess.run([sys.executable, os.path.abspath(__file__), "--out", out, "--worker", version],
                       env=release_env(out, site), check=True, cwd=out)
        for root, _, files in os.walk(os.path.join(out, version)):
            for f in sorted(files):
                if f.endswith(".pt"):
                    rel = os.path.relpath(os.path.join(root, f), out)
                    model = rel.split("/")[1].replace("-random.pt", "")
                    manifest[rel] = {"release": version, "model": model,
                                     "task": "pose" if "pose" in model else "detect",
                                     "custom_yaml": "custom" in model}
        seconds[version] = round(time.perf_counter() - start, 1)
        print(f"pt corpus: Ultralytics {version} in {seconds[version]} s", flush=True)
    start = time.perf_counter()
    reference_reads(out, manifest, os.path.join(out, "data", "val-photos"))
    seconds["reference reads"] = round(time.perf_counter() - start, 1)
    seconds["total"] = round(time.perf_counter() - start_all, 1)
    print(f"pt corpus: {len(manifest)} files; reference reads in {seconds['reference reads']} s; "
          f"total {seconds['total']} s", flush=True)
    with open(os.path.join(out, "MANIFEST.json.tmp"), "w") as f:
        json.dump({"files": manifest, "seconds": seconds, "releases": RELEASES}, f, indent=1)
    os.replace(os.path.join(out, "MANIFEST.json.tmp"), os.path.join(out, "MANIFEST.json"))


if __name__ == "__main__":
    sys.exit(main())
