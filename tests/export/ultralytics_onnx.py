"""Runs a detrain-exported ONNX file through Ultralytics 8.4.190 as its users do (test helper).

usage:
  ultralytics_onnx.py meta    ONNX                          the metadata as AutoBackend reads it
  ultralytics_onnx.py predict PT ONNX IMAGES_DIR IMGSZ CONF  YOLO(ONNX).predict vs YOLO(PT).predict
  ultralytics_onnx.py val     PT ONNX DATA_YAML IMGSZ OUT    YOLO(ONNX).val vs YOLO(PT).val
  ultralytics_onnx.py yolo-copy DATA_ROOT OUT                coco-mini in YOLO format (pt_fixtures.yolo_copy)
  ultralytics_onnx.py readme  README.md E2E.onnx NMS.onnx PHOTO OUT  README's onnxruntime snippets vs YOLO(ONNX)

Runs in the reference environment (.venv-ref: ultralytics==8.4.190, onnx, onnxruntime). The last
line starting "RESULT " holds one JSON object the C++ test (test_export_ultralytics.cpp) checks. Exit 0 on
success, 3 when onnxruntime or onnx is missing here (the test skips), 1 on anything else.
"""
import json
import os
import re
import sys

# As the golden generators run the reference: offline, quiet, and never installing anything
# (AutoBackend's check_requirements would otherwise pip-install a missing onnxruntime).
os.environ.setdefault("YOLO_OFFLINE", "true")
os.environ.setdefault("YOLO_VERBOSE", "false")
os.environ["YOLO_AUTOINSTALL"] = "false"
os.environ.setdefault("OMP_NUM_THREADS", "2")

try:
    import onnx  # noqa: F401  (AutoBackend's check_requirements("onnx"))
    import onnxruntime  # noqa: F401
except ImportError as e:
    print(f"ultralytics_onnx.py: {e}; run scripts/setup.sh (it installs onnxruntime into .venv-ref)")
    sys.exit(3)

import numpy as np  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(2)

# Equality of a detection, YOLO(onnx) vs YOLO(pt), on the same letterboxed input. The raw outputs
# differ by kernel rounding only: onnxruntime vs LibTorch within 2048 ulps of the output's scale
# (tests/export/export_fixtures.h) and LibTorch vs PyTorch within 1e-4 of the largest raw value
# (tests/weights/test_ultralytics_pt.cpp).
SCORE_TOL = 1e-3  # a score (a sigmoid): 1e-4-sized logit differences, 10x margin
BOX_TOL_INPUT_PX = 0.05  # a coordinate, in input pixels (0.06 px is 2048 ulps at 256 px)


def photos(folder):
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.lower().endswith((".jpg", ".png")))


def detections(model, files, imgsz, conf, **kwargs):
    out = {}
    for r in model.predict(files, imgsz=imgsz, conf=conf, device="cpu", verbose=False, stream=True, **kwargs):
        item = {"xyxy": r.boxes.xyxy.double().numpy(), "score": r.boxes.conf.double().numpy(),
                "cls": r.boxes.cls.long().numpy(), "shape": r.orig_shape}
        if r.keypoints is not None:
            item["kpts"] = r.keypoints.data.double().numpy()
        out[os.path.basename(r.path)] = item
    return out


def iou(a, b):
    w = np.clip(np.minimum(a[2], b[:, 2]) - np.maximum(a[0], b[:, 0]), 0, None)
    h = np.clip(np.minimum(a[3], b[:, 3]) - np.maximum(a[1], b[:, 1]), 0, None)
    inter = w * h
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]) - inter)


def compare(want, got, conf, max_det, imgsz):
    """Each detection of `want` must have one in `got` of the same class, score and keypoint
    visibilities within SCORE_TOL and every coordinate (keypoints too) within BOX_TOL_INPUT_PX
    scaled to the photo; and the other way round ("compared" counts both sides). Not required, and counted: a detection whose score is within SCORE_TOL of
    the threshold or of the max_det-th score (either side may keep it), and one that NMS kept
    over a rival of the same class with IoU > 0.5 whose score is within SCORE_TOL (a tie that
    float rounding breaks either way; the rival is then found instead)."""
    stats = {"images": len(want), "detections": 0, "compared": 0, "matched": 0, "borderline": 0, "near_ties": 0,
             "unmatched": 0, "max_box_px": 0.0, "max_score": 0.0, "max_kpt_px": 0.0, "max_kpt_conf": 0.0,
             "examples": []}
    for name in sorted(want):
        w, g = want[name], got[name]
        tol = BOX_TOL_INPUT_PX * max(w["shape"]) / imgsz  # input pixels -> photo pixels
        for a, b in ((w, g), (g, w)):
            floor = a["score"].min() if len(a["score"]) >= max_det else conf
            used = np.zeros(len(b["score"]), bool)
            for i in np.argsort(-a["score"]):
                stats["compared"] += 1
                if a is w:
                    stats["detections"] += 1
                same = (b["cls"] == a["cls"][i]) & (np.abs(b["score"] - a["score"][i]) <= SCORE_TOL) & ~used
                box_err = np.abs(b["xyxy"] - a["xyxy"][i]).max(1) if len(b["score"]) else np.zeros(0)
                ok = same & (box_err <= tol)
                if "kpts" in a and len(b["score"]):  # keypoints: x, y like the box, visibility like a score
                    d = np.abs(b["kpts"] - a["kpts"][i])
                    ok &= (d[..., :2].max((1, 2)) <= tol) & (d[..., 2].max(1) <= SCORE_TOL)
                if ok.any():
                    j = int(np.flatnonzero(ok)[np.argmin(box_err[ok])])
                    used[j] = True
                    if a is w:
                        stats["matched"] += 1
                        stats["max_box_px"] = max(stats["max_box_px"], float(box_err[j]) / tol * BOX_TOL_INPUT_PX)
                        stats["max_score"] = max(stats["max_score"], float(abs(b["score"][j] - a["score"][i])))
                        if "kpts" in a:
                            d = np.abs(b["kpts"][j] - a["kpts"][i])
                            stats["max_kpt_px"] = max(stats["max_kpt_px"], float(d[:, :2].max()) / tol * BOX_TOL_INPUT_PX)
                            stats["max_kpt_conf"] = max(stats["max_kpt_conf"], float(d[:, 2].max()))
                    continue
                if a["score"][i] < floor + SCORE_TOL:
                    stats["borderline"] += 1
                    continue
                rivals = (b["cls"] == a["cls"][i]) & (np.abs(b["score"] - a["score"][i]) <= SCORE_TOL)
                if len(b["score"]) and (rivals & (iou(a["xyxy"][i], b["xyxy"]) > 0.5)).any():
                    stats["near_ties"] += 1
                    continue
                stats["unmatched"] += 1
                if len(stats["examples"]) < 5:
                    side = "pt" if a is w else "onnx"
                    stats["examples"].append(f"{name}: {side} class {int(a['cls'][i])} score {a['score'][i]:.5f} "
                                             f"box {np.round(a['xyxy'][i], 2).tolist()} has no counterpart")
    return stats


def cmd_meta(onnx_path):
    import ast

    from ultralytics import YOLO
    from ultralytics.nn.backends.base import BaseBackend

    meta = BaseBackend.read_metadata(onnx_path)
    # A fixed file: no imgsz given, so the prediction only runs if Ultralytics takes the input size
    # from the metadata. A --dynamic file (free batch, fixed size) is free in every dimension to
    # Ultralytics, so it needs the export size and a square letterbox, as docs/export.md says.
    dynamic = ast.literal_eval(meta["args"])["dynamic"]
    size = dict(imgsz=ast.literal_eval(meta["imgsz"]), rect=False) if dynamic else {}
    model = YOLO(onnx_path)
    model.predict(np.zeros((64, 96, 3), np.uint8), verbose=False, **size)  # builds the AutoBackend
    backend = model.predictor.model
    return {"task": model.task, "stride": backend.stride, "names": {str(k): v for k, v in backend.names.items()},
            "imgsz": list(backend.imgsz), "batch": backend.batch, "end2end": backend.end2end,
            "dynamic": backend.dynamic, "fp16": backend.fp16, "channels": backend.channels,
            "kpt_shape": list(getattr(backend, "kpt_shape", []) or []), "format": backend.format}


def pt_head(onnx_path):
    """The .pt's arguments that pick the head branch the ONNX file holds. 8.4.190 runs a YOLO26
    .pt through its one-to-many branch and NMS unless nms=False (AutoBackend's end2end argument);
    an end-to-end file holds the one-to-one branch, as `yolo export nms=False` writes it."""
    from ultralytics.nn.backends.base import BaseBackend

    return {"nms": False} if BaseBackend.read_metadata(onnx_path).get("end2end") == "True" else {}


def cmd_predict(pt, onnx_path, folder, imgsz, conf):
    from ultralytics import YOLO

    files = photos(folder)
    # rect=False: the .pt gets the same imgsz x imgsz letterbox a fixed-size ONNX file gets.
    want = detections(YOLO(pt), files, imgsz, conf, rect=False, **pt_head(onnx_path))
    got = detections(YOLO(onnx_path), files, imgsz, conf)
    return compare(want, got, conf, 300, imgsz)


def cmd_val(pt, onnx_path, data, imgsz, out):
    from ultralytics import YOLO

    common = dict(data=data, imgsz=imgsz, device="cpu", plots=False, verbose=False, project=out, exist_ok=True)
    result = {}
    # batch=1 and rect=False for both: the ONNX file's fixed input (its metadata batch and imgsz).
    pt_args = {"batch": 1, "rect": False, **pt_head(onnx_path)}
    for kind, path, extra in (("pt", pt, pt_args), ("onnx", onnx_path, {})):
        metrics = YOLO(path).val(name=kind, **common, **extra)
        result[kind] = {"box_map": float(metrics.box.map), "box_map50": float(metrics.box.map50)}
        if hasattr(metrics, "pose"):
            result[kind]["pose_map"] = float(metrics.pose.map)
            result[kind]["pose_map50"] = float(metrics.pose.map50)
    return result


def cmd_yolo_copy(data_root, out):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden"))
    from pt_fixtures import yolo_copy

    return {"root": yolo_copy(os.path.abspath(data_root), os.path.abspath(out))}


EXPORT_NMS_PREFIX = 'keep its first six lines with\n`"yolo11n.onnx"`, then'


def python_blocks(text, heading, level):
    """The ```python blocks of the section of `text` under `heading` (a line starting with it),
    up to the next heading of that level or higher."""
    section = text[text.index("\n" + heading) + 1:]
    section = section[: min([i for i in (section.find("\n" + "#" * n + " ", 1) for n in range(1, level + 1))
                             if i > 0] or [len(section)])]
    return section, [b.split("```", 1)[0] for b in section.split("```python\n")[1:]]


def readme_snippets(readme):
    """The two onnxruntime programs as a user copies them: the README's end-to-end block, and
    docs/export.md's NMS block after the end-to-end block's first six lines with yolo11n.onnx (as
    that section says)."""
    _, e2e = python_blocks(open(readme).read(), "## Export", 2)
    guide = os.path.join(os.path.dirname(os.path.abspath(readme)), "docs", "export.md")
    section, nms = python_blocks(open(guide).read(), "### onnxruntime and an NMS model", 3)
    if len(e2e) != 1 or len(nms) != 1 or " ".join(EXPORT_NMS_PREFIX.split()) not in " ".join(section.split()):
        raise SystemExit("README.md's Export section or docs/export.md's NMS section no longer has the "
                         "onnxruntime block this test runs")
    head = e2e[0].splitlines(keepends=True)[:6]
    return e2e[0], "".join(head).replace('"yolo26n.onnx"', '"yolo11n.onnx"') + nms[0]


SNIPPET_LINE = re.compile(r"^(.*) (\d+\.\d{3}) \[(.*)\]$")


def snippet_runs(readme, e2e_onnx, nms_onnx):
    """(label, code, model file, the name the code opens it by, threshold): each snippet as printed
    (0.25), and the end-to-end one again with its threshold lowered to 0, so that every row of a
    model whose scores all stay below 0.25 (a one-epoch yolo26n) is printed and compared too."""
    e2e, nms = readme_snippets(readme)
    if e2e.count("> 0.25") != 1:
        raise SystemExit("README.md's end-to-end snippet no longer filters with '> 0.25' once")
    return [("e2e", e2e, e2e_onnx, "yolo26n.onnx", 0.25),
            ("e2e-all-rows", e2e.replace("> 0.25", "> 0.0"), e2e_onnx, "yolo26n.onnx", 0.0),
            ("nms", nms, nms_onnx, "yolo11n.onnx", 0.25)]


def cmd_readme(readme, e2e_onnx, nms_onnx, photo, out):
    """Runs each snippet in its own folder (model file, bus.jpg = PHOTO resized to the model's input
    size, so that the snippet's resize and Ultralytics' letterbox both leave it as it is) and
    compares what it prints with YOLO(onnx).predict(bus.jpg, conf=threshold) on the same file."""
    import ast
    import subprocess

    import cv2
    from ultralytics import YOLO
    from ultralytics.nn.backends.base import BaseBackend

    result = {}
    for label, code, model, name, conf in snippet_runs(readme, e2e_onnx, nms_onnx):
        folder = os.path.join(out, label)
        os.makedirs(folder, exist_ok=True)
        os.symlink(os.path.abspath(model), os.path.join(folder, name))
        h, w = ast.literal_eval(BaseBackend.read_metadata(model)["imgsz"])
        cv2.imwrite(os.path.join(folder, "bus.jpg"), cv2.resize(cv2.imread(photo), (w, h)))
        with open(os.path.join(folder, "snippet.py"), "w") as f:
            f.write(code)
        run = subprocess.run([sys.executable, "snippet.py"], cwd=folder, capture_output=True, text=True)
        if run.returncode != 0:
            raise SystemExit(f"README {label} snippet failed:\n{run.stderr[-2000:]}")
        printed = []
        for line in run.stdout.splitlines():
            m = SNIPPET_LINE.match(line)
            if not m:
                raise SystemExit(f"README {label} snippet printed an unexpected line: {line!r}")
            box = np.clip([float(v) for v in m.group(3).split(",")], 0, [w, h, w, h])  # Ultralytics clips
            printed.append((m.group(1), float(m.group(2)), box))
        r = next(iter(YOLO(os.path.join(folder, name)).predict(os.path.join(folder, "bus.jpg"), conf=conf,
                                                                   device="cpu", verbose=False)))
        names = r.names
        want = [(names[int(c)], float(s), b) for c, s, b in
                zip(r.boxes.cls.tolist(), r.boxes.conf.tolist(), r.boxes.xyxy.double().numpy())]
        # The snippet prints 3 decimals of a score and 1 of a coordinate: half a unit of each on top.
        unmatched = 0
        for n, s, b in want:
            hit = [i for i, (pn, ps, pb) in enumerate(printed) if pn == n and abs(ps - s) <= SCORE_TOL + 5e-4
                   and np.abs(pb - b).max() <= BOX_TOL_INPUT_PX + 0.05]
            if hit:
                printed.pop(hit[0])
            else:
                unmatched += 1
        result[label] = {"ultralytics": len(want), "unmatched": unmatched, "extra": len(printed),
                         "stdout": run.stdout[-1000:]}
    return result


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "meta":
        result = cmd_meta(args[0])
    elif cmd == "predict":
        result = cmd_predict(args[0], args[1], args[2], int(args[3]), float(args[4]))
    elif cmd == "val":
        result = cmd_val(args[0], args[1], args[2], int(args[3]), args[4])
    elif cmd == "readme":
        result = cmd_readme(*args[:5])
    elif cmd == "yolo-copy":
        result = cmd_yolo_copy(args[0], args[1])
    else:
        raise SystemExit(f"ultralytics_onnx.py: unknown command {cmd}")
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except Exception as e:  # one line for the C++ test's failure message
        import traceback

        traceback.print_exc()
        print(f"ultralytics_onnx.py: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        sys.exit(1)
