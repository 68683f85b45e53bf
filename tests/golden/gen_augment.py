"""augment.safetensors: LetterBox, RandomPerspective, Mosaic, RandomHSV and segment2box of Ultralytics 8.4.190.

Every call is the reference's own transform (ultralytics.data.augment, ultralytics.utils.ops,
ultralytics.data.utils); the recorder only reads what they draw and return. Every random value a
case depends on is stored, so the C++ side never has to reproduce Python's or numpy's RNG. Images are
HWC BGR uint8. The source photo is coco-mini/images/000000000139.jpg (426x640), read with
cv2.imread; `letterbox640.output[107:533]` is that decoded source bit for bit (r = 1), so use it instead
of decoding the JPEG. Every other input image that came from a JPEG is stored too.

1. LetterBox (same names as the 8.4.41 file): LetterBox((S,S), auto=False, scale_fill=False,
   scaleup=True, center=True, stride=32, padding_value=114, INTER_LINEAR), labels = 3 normalised
   xywh boxes.
   - `letterbox.input_boxes_xywhn` [3,4] F32.
   - `letterbox640.output` [640,640,3] U8, `letterbox160.output` [160,160,3] U8,
     `letterbox_crop192.output` [192,192,3] U8 (source[100:200, 200:350] to 192, an upscale).
   - `<case>.boxes_xyxy_px` [3,4] F32: the boxes after the transform. Ratio and pads: metadata `info`.
2. RandomPerspective on `letterbox160.output`, size (160,160), random.seed(3) right before the
   call (same names as the 8.4.41 file, where border=(0,0) gave the same size):
   - `perspective.input_boxes_xyxy_px` [5,4] F32, `perspective.input_keypoints_px` [5,17,3] F32.
   - `perspective.<p>.M` [3,3] F32 (T@S@R@P@C as get_params drew it), `.scale` [1] F32 (the drawn s),
     `.output_img` [160,160,3] U8, `.kept` [5] BOOL, `.output_boxes_xyxy_px` [K,4] F32,
     `.output_keypoints_px` [K,17,3] F32, for <p> = `general` (degrees 10, translate 0.1,
     scale 0.5, shear 2) and `default` (degrees 0, translate 0.1, scale 0.5, shear 0).
3. `perspective_nomosaic.*`: the train pipeline with mosaic off (close_mosaic epochs). 8.4.190 warps
   the image exactly as load_image left it (long side 160: 160x107 here, an odd height) with
   C = -(w/2, h/2) = -(80, 53.5) and size (160,160); 8.4.41 letterboxed it first (top pad
   round(26.5 - 0.1) = 26) and then centred the 160x160 letterbox (C = -80). Default train params,
   random.seed(3).
   - `perspective_nomosaic.input_img` [107,160,3] U8: YOLODataset.load_image of the source at imgsz 160.
   - `perspective_nomosaic.input_boxes_xywhn` [B,4] F32, `.input_cls` [B] F32: its COCO labels.
   - `perspective_nomosaic.M` [3,3] F32, `.scale` [1] F32, `.output_img` [160,160,3] U8,
     `.kept` [B] BOOL, `.output_boxes_xyxy_px` [K,4] F32, `.output_cls` [K] F32.
   - `perspective_nomosaic.letterbox_first.*` (`M`, `scale`, `output_img`, `kept`,
     `output_boxes_xyxy_px`): 8.4.190's LetterBox((160,160)) and then the same RandomPerspective with
     the same seed, i.e. 8.4.41's order. `letterbox_first.M` acts on the padded image; on the raw
     image it is M @ [[1,0,0],[0,1,26],[0,0,1]], whose translation differs from
     `perspective_nomosaic.M` by s*0.5 px in y: 8.4.190 moves the content by half a pixel.
4. `mosaic.*`: Mosaic(dataset, imgsz=160, p=1.0, n=4) of 8.4.190 on a YOLODataset (imgsz 160,
   augment) of 5 coco-mini photos; main image = dataset index `mosaic.tile_index[0]`, the other three
   were in the mosaic buffer (random.choices). random.seed(metadata `mosaic_seed`) right before the call.
   - `mosaic.tile<k>.img` [h,w,3] U8 (k = 0..3, placement order: top-left, top-right, bottom-left,
     bottom-right): each image as load_image resized it; `mosaic.tile<k>.boxes_xywhn` [n,4] F32 and
     `mosaic.tile<k>.cls` [n] F32: its labels (normalised to that image).
   - `mosaic.tile_index` [4] I64: dataset index of each tile; `mosaic.tile_hw` [4,2] I64.
   - `mosaic.draws` [2] F64: the raw random.uniform values for yc and xc (before int());
     `mosaic.center_yx` [2] I64: yc, xc; `mosaic.border` [2] I64: Mosaic.border (-80, -80).
   - `mosaic.layout` [4,10] I64: per tile x1a, y1a, x2a, y2a (destination in the 320x320 canvas),
     x1b, y1b, x2b, y2b (source rectangle in the tile), padw, padh.
   - `mosaic.output_img` [320,320,3] U8 (fill 114), `mosaic.output_boxes_xyxy_px` [K,4] F32,
     `mosaic.output_cls` [K] F32: labels after mosaic (boxes shifted by pad, clipped to the canvas,
     zero-area rows removed), before RandomPerspective. `mosaic.output_tile` [K] I64: which tile each
     row came from (the tiles' rows in order, minus the removed ones).
5. `hsv.*`: RandomHSV(0.015, 0.7, 0.4) on a copy of `letterbox160.output`, np.random.seed(0).
   - `hsv.r` [3] F64: the drawn gains (np.random.uniform(-1,1,3) * gains).
   - `hsv.lut` [256,3] U8: the LUT it built (hue, sat, val columns); `hsv.im_hsv` [160,160,3] U8:
     cv2.cvtColor(BGR2HSV) of the input (the LUT's input); `hsv.output` [160,160,3] U8.
6. `segment2box.*`: ultralytics.utils.ops.segment2box(segment, width=160, height=120) on polygons in
   pixels: `segment2box.points` [P,Kmax,2] F32 (zero padded), `segment2box.npoints` [P] I64,
   `segment2box.boxes` [P,4] F32 xyxy. Case names in metadata `segment2box_cases`.
7. `polylabel.*`: a YOLO label file whose rows are polygons, through data.utils.verify_image_label
   (detect task): `polylabel.points` [R,Kmax,2] F32 normalised (zero padded), `polylabel.npoints` [R]
   I64, `polylabel.cls` [R] F32, `polylabel.boxes_xywhn` [R,4] F32 (the label's boxes: segments2boxes,
   the polygon's min/max with no clipping).
8. `segperspective.*`: RandomPerspective (default train params, size (160,160), random.seed(5)) on
   instances with polygons (pixels, resampled to 100 points each with ops.resample_segments; the dataset
   uses 1000): boxes come from segment2box of the warped polygons, not from the warped boxes, and the
   area threshold is 0.01. `segperspective.input_img` is `letterbox160.output`.
   `segperspective.input_segments_px` [N,100,2] F32, `.input_boxes_xyxy_px` [N,4] F32, `.M` [3,3] F32,
   `.scale` [1] F32, `.kept` [N] BOOL, `.output_boxes_xyxy_px` [K,4] F32, `.output_segments_px`
   [K,100,2] F32 (clipped to their box).

Metadata: provenance, `source_image`, `letterbox`, `perspective`, `info` (JSON: per case ratio, pads,
draws), `mosaic_seed`, `mosaic_files`, `hsv`, `segment2box_cases`, `segment2box_size_wh`,
`polylabel_rows`, `changes_vs_8_4_41`.
"""

import json
import os
import random
import shutil
import tempfile

import numpy as np

import common

FILES = ["augment.safetensors"]

SOURCE = "000000000139.jpg"
MOSAIC_FILES = ["000000000139.jpg", "000000000802.jpg", "000000022192.jpg", "000000165518.jpg", "000000549055.jpg"]
MOSAIC_MAIN = "000000000802.jpg"
LB_BOXES = [[0.5, 0.5, 0.25, 0.3], [0.1, 0.2, 0.12, 0.2], [0.9, 0.85, 0.18, 0.28]]
P_BOXES = [[20, 30, 70, 110], [100, 40, 150, 90], [2, 140, 12, 158], [60, 60, 64, 64], [120, 100, 159, 150]]
# The 8.4.41 file's keypoints (x4 = integers), 5 instances x 17 x (x, y, v).
_KPT4 = """
269 354 2 129 208 0 205 367 1 247 201 0 232 382 1 280 456 0 266 455 1 280 418 2 66 429 0 165 355 0 176 300 2
76 432 0 61 132 0 259 233 1 296 318 0 248 272 1 136 385 1
399 328 2 603 270 1 563 288 1 457 282 0 425 293 1 523 217 2 523 313 1 444 144 1 421 231 1 564 153 0 541 170 1
572 357 2 433 285 2 554 330 0 398 285 1 382 277 0 423 331 1
27 542 2 48 562 2 43 564 0 -9 605 1 51 603 2 60 598 1 14 578 0 47 584 2 56 596 0 28 604 1 -2 603 1 47 620 2
55 651 0 13 624 1 5 595 1 49 649 1 29 554 2
233 270 1 263 243 0 229 228 2 227 244 1 235 241 2 265 252 0 247 227 0 222 244 2 231 257 0 252 243 1 223 273 1
238 240 2 232 269 2 259 239 2 228 242 0 241 259 2 245 250 2
529 515 0 488 565 2 512 549 2 616 480 0 510 605 0 483 616 1 577 584 1 639 489 2 521 577 0 560 444 2 536 421 2
645 398 2 629 572 1 556 614 2 652 451 2 504 553 1 542 443 2
"""
PERSPECTIVE = {
    "general": dict(degrees=10.0, translate=0.1, scale=0.5, shear=2.0, perspective=0.0),
    "default": dict(degrees=0.0, translate=0.1, scale=0.5, shear=0.0, perspective=0.0),
}
# segment2box cases on a 160 (w) x 120 (h) image, pixels.
SEG2BOX = {
    "inside": [[20, 10], [70, 30], [40, 80]],
    "left_edge": [[-30, 20], [40, 10], [50, 60], [-10, 90]],
    "corner": [[-20, -15], [30, -10], [25, 30], [-5, 40]],
    "across": [[-40, 50], [200, 40], [210, 70], [-30, 90]],
    "outside": [[170, 10], [200, 10], [190, 50]],
    "bbox_overlap_only": [[150, -30], [200, -30], [200, 20]],
    "encloses_image": [[-10, -10], [200, -20], [190, 150], [-20, 140]],
    "bottom_right": [[140, 100], [180, 110], [150, 140]],
}
# polygon label rows (class, normalised x y pairs): two inside, one 0.5 % past the left edge.
POLY_ROWS = [
    (3, [[0.1, 0.1], [0.4, 0.15], [0.3, 0.5]]),
    (7, [[0.5, 0.5], [0.9, 0.55], [0.85, 0.95], [0.6, 0.9], [0.52, 0.7]]),
    (7, [[-0.005, 0.2], [0.2, 0.25], [0.1, 0.6]]),
]
# polygons for segperspective, pixels on letterbox160.output
SEGP = [
    [[30, 40], [80, 35], [90, 100], [40, 110]],
    [[100, 20], [155, 30], [150, 80]],
    [[2, 120], [30, 118], [20, 159], [0, 150]],
]


def _capture(obj, name, store):
    """Wrap obj.<name> (an instance method) to keep its return value; the call itself is unchanged."""
    fn = getattr(obj, name)

    def wrapper(*args, **kwargs):
        out = fn(*args, **kwargs)
        store.append(out)
        return out

    setattr(obj, name, wrapper)


def _instances(boxes, fmt, normalized, keypoints=None, segments=None):
    from ultralytics.utils.instance import Instances

    b = np.array(boxes, dtype=np.float32).reshape(-1, 4)
    seg = np.zeros((0, 1000, 2), dtype=np.float32) if segments is None else segments
    return Instances(b, seg, keypoints, bbox_format=fmt, normalized=normalized)


def _letterbox(img, size, t, info, name):
    import cv2
    from ultralytics.data.augment import LetterBox

    lb = LetterBox((size, size), auto=False, scale_fill=False, scaleup=True, center=True, stride=32,
                   padding_value=114, interpolation=cv2.INTER_LINEAR)
    params = []
    _capture(lb, "get_params", params)
    labels = {"img": img, "cls": np.zeros((3, 1), dtype=np.float32),
              "instances": _instances(LB_BOXES, "xywh", True)}
    out = lb(labels)
    out["instances"].convert_bbox("xyxy")
    p = params[0]
    t[f"{name}.output"] = out["img"]
    t[f"{name}.boxes_xyxy_px"] = out["instances"].bboxes.astype(np.float32)
    info[name] = {"src_hw": list(img.shape[:2]), "ratio": list(p["ratio"]), "left": p["left"], "top": p["top"],
                  "right": p["right"], "bottom": p["bottom"], "new_unpad_wh": list(p["new_unpad"]),
                  "out_hw": list(out["img"].shape[:2])}
    return out["img"]


def _perspective(img, boxes, seed, params, keypoints=None, segments=None, cls=None, normalized=False,
                 fmt="xyxy"):
    """RandomPerspective of 8.4.190 (size 160x160) after random.seed(seed); returns the labels and its params."""
    from ultralytics.data.augment import RandomPerspective

    rp = RandomPerspective(**params, size=(160, 160))
    got = []
    _capture(rp, "get_params", got)
    n = len(boxes)
    labels = {"img": img.copy(), "cls": (np.arange(n, dtype=np.float32) if cls is None else cls).reshape(-1, 1),
              "instances": _instances(boxes, fmt, normalized, keypoints, segments)}
    random.seed(seed)
    out = rp(labels)
    # kept rows: cls was set to the row index when no class is given
    return out, got[0]



def _store_warp(t, prefix, out, params, n):
    """Stores a RandomPerspective result under `prefix` (M, scale, image, kept mask of the n input
    rows, xyxy boxes) and returns the kept row numbers (carried in cls)."""
    kept = out["cls"].reshape(-1).astype(np.int64)
    t[f"{prefix}.M"] = params["M"].astype(np.float32)
    t[f"{prefix}.scale"] = np.array([params["scale"]], dtype=np.float32)
    t[f"{prefix}.output_img"] = out["img"]
    t[f"{prefix}.kept"] = _kept_mask(kept, n)
    out["instances"].convert_bbox("xyxy")
    t[f"{prefix}.output_boxes_xyxy_px"] = out["instances"].bboxes.astype(np.float32)
    return kept


def _kept_mask(out_cls_rows, n):
    kept = np.zeros(n, dtype=bool)
    kept[out_cls_rows] = True
    return kept


def _coco_labels(root):
    """COCO boxes (non-crowd) of the mosaic photos as YOLO detect rows: class index (0..79), cx cy w h."""
    d = json.load(open(os.path.join(root, "coco-mini", "annotations", "instances.json")))
    cat_index = {c["id"]: k for k, c in enumerate(sorted(d["categories"], key=lambda c: c["id"]))}
    names = {k: c["name"] for k, c in enumerate(sorted(d["categories"], key=lambda c: c["id"]))}
    images = {im["file_name"]: im for im in d["images"]}
    rows = {}
    for fname in MOSAIC_FILES:
        im = images[fname]
        lines = []
        for a in sorted((a for a in d["annotations"] if a["image_id"] == im["id"] and not a["iscrowd"]),
                        key=lambda a: a["id"]):
            x, y, w, h = a["bbox"]
            lines.append(f"{cat_index[a['category_id']]} {(x + w / 2) / im['width']:.6f} "
                         f"{(y + h / 2) / im['height']:.6f} {w / im['width']:.6f} {h / im['height']:.6f}")
        rows[fname] = lines
    return rows, names


def _build_dataset(tmp, data_root):
    from ultralytics.cfg import get_cfg
    from ultralytics.data.dataset import YOLODataset

    rows, names = _coco_labels(data_root)
    os.makedirs(os.path.join(tmp, "images"))
    os.makedirs(os.path.join(tmp, "labels"))
    for fname in MOSAIC_FILES:
        shutil.copyfile(os.path.join(data_root, "coco-mini", "images", fname), os.path.join(tmp, "images", fname))
        with open(os.path.join(tmp, "labels", fname.replace(".jpg", ".txt")), "w") as f:
            f.write("\n".join(rows[fname]) + "\n")
    hyp = get_cfg()
    ds = YOLODataset(img_path=os.path.join(tmp, "images"), imgsz=160, cache=False, augment=True, hyp=hyp,
                     prefix="", rect=False, batch_size=16, stride=32, pad=0.0, data={"names": names, "nc": 80},
                     task="detect")
    return ds


def _mosaic(ds, t, info):
    from ultralytics.data.augment import Mosaic

    files = [os.path.basename(f) for f in ds.im_files]
    main = files.index(MOSAIC_MAIN)
    others = [k for k in range(len(files)) if files[k] != MOSAIC_MAIN and files[k] != SOURCE]
    for k in others:  # the trainer has loaded these before: they sit in the mosaic buffer
        ds.load_image(k)
    state = (list(ds.buffer), list(ds.ims), list(ds.im_hw0), list(ds.im_hw))
    seed = None
    for s in range(1000):  # first seed whose random.choices picks the three other photos once each
        ds.buffer, ds.ims, ds.im_hw0, ds.im_hw = (list(x) for x in state)
        labels = ds.get_image_and_label(main)
        random.seed(s)
        random.uniform(0, 1)  # BaseMixTransform.__call__'s p test comes first
        if sorted(random.choices(list(ds.buffer), k=3)) == sorted(others):
            seed = s
            break
    assert seed is not None
    ds.buffer, ds.ims, ds.im_hw0, ds.im_hw = (list(x) for x in state)
    labels = ds.get_image_and_label(main)
    mosaic = Mosaic(ds, imgsz=160, p=1.0, n=4)
    got, draws = [], []
    _capture(mosaic, "get_params", got)
    uniform = random.uniform

    def recording_uniform(a, b):
        v = uniform(a, b)
        draws.append((a, b, v))
        return v

    tiles = []  # each tile's image and labels before the mosaic moves them
    random.seed(seed)
    random.uniform = recording_uniform
    try:
        orig_get = ds.get_image_and_label

        def get_and_keep(i):
            lab = orig_get(i)
            tiles.append((i, lab["img"].copy(), lab["instances"].bboxes.copy(), lab["cls"].copy()))
            return lab

        ds.get_image_and_label = get_and_keep
        main_tile = (main, labels["img"].copy(), labels["instances"].bboxes.copy(), labels["cls"].copy())
        out = mosaic(labels)
    finally:
        random.uniform = uniform
        del ds.get_image_and_label
    tiles = [main_tile, *tiles]
    layout = got[0]["layout"]
    assert draws[0][:2] == (0, 1) and len(draws) == 3, draws
    keys = ("x1a", "y1a", "x2a", "y2a", "x1b", "y1b", "x2b", "y2b", "padw", "padh")
    for k, (idx, img, boxes, cls) in enumerate(tiles):
        t[f"mosaic.tile{k}.img"] = img
        t[f"mosaic.tile{k}.boxes_xywhn"] = boxes.astype(np.float32)
        t[f"mosaic.tile{k}.cls"] = cls.reshape(-1).astype(np.float32)
    t["mosaic.tile_index"] = np.array([x[0] for x in tiles], dtype=np.int64)
    t["mosaic.tile_hw"] = np.array([x[1].shape[:2] for x in tiles], dtype=np.int64)
    t["mosaic.draws"] = np.array([draws[1][2], draws[2][2]], dtype=np.float64)
    yc, xc = int(draws[1][2]), int(draws[2][2])
    assert (layout[0]["x2a"], layout[0]["y2a"]) == (xc, yc)
    t["mosaic.center_yx"] = np.array([yc, xc], dtype=np.int64)
    t["mosaic.border"] = np.array(mosaic.border, dtype=np.int64)
    t["mosaic.layout"] = np.array([[item[key] for key in keys] for item in layout], dtype=np.int64)
    inst = out["instances"]
    inst.convert_bbox("xyxy")
    t["mosaic.output_img"] = out["img"]
    t["mosaic.output_boxes_xyxy_px"] = inst.bboxes.astype(np.float32)
    t["mosaic.output_cls"] = out["cls"].reshape(-1).astype(np.float32)
    # which tile each surviving row came from: redo the clip/zero-area test on the shifted tile boxes
    src = np.concatenate([np.full(len(x[2]), k) for k, x in enumerate(tiles)])
    good = _mosaic_good(tiles, layout)
    assert good.sum() == len(inst.bboxes)
    t["mosaic.output_tile"] = src[good].astype(np.int64)
    info["mosaic"] = {
        "seed": seed, "p_draw": draws[0][2], "uniform_ranges": [list(draws[1][:2]), list(draws[2][:2])],
        "files": [files[x[0]] for x in tiles], "layout_keys": list(keys), "canvas_hw": list(out["img"].shape[:2]),
        "buffer_at_call": [int(b) for b in state[0]] + [main],
    }
    return seed


def _mosaic_good(tiles, layout):
    """Rows Mosaic keeps, from the reference's own Instances ops (denormalise, pad, clip, area > 0)."""
    from ultralytics.utils.instance import Instances

    good = []
    for (idx, img, boxes, cls), item in zip(tiles, layout):
        inst = Instances(boxes.copy(), np.zeros((0, 1000, 2), np.float32), None, bbox_format="xywh", normalized=True)
        inst.convert_bbox("xyxy")
        h, w = item["img_shape"]
        inst.denormalize(w, h)
        inst.add_padding(item["padw"], item["padh"])
        inst.clip(320, 320)
        good.append(inst.remove_zero_area_boxes())
    return np.concatenate(good)


def _nomosaic(ds, t, info):
    from ultralytics.data.augment import LetterBox

    files = [os.path.basename(f) for f in ds.im_files]
    labels = ds.get_image_and_label(files.index(SOURCE))
    img = labels["img"].copy()
    boxes = labels["instances"].bboxes.copy()
    cls = labels["cls"].reshape(-1).astype(np.float32)
    n = len(boxes)
    t["perspective_nomosaic.input_img"] = img
    t["perspective_nomosaic.input_boxes_xywhn"] = boxes.astype(np.float32)
    t["perspective_nomosaic.input_cls"] = cls
    rows = np.arange(n, dtype=np.float32)
    out, p = _perspective(img, boxes, 3, PERSPECTIVE["default"], cls=rows, normalized=True, fmt="xywh")
    kept_rows = _store_warp(t, "perspective_nomosaic", out, p, n)
    t["perspective_nomosaic.output_cls"] = cls[kept_rows]
    # 8.4.41's order: LetterBox to 160x160 first, then the same warp and seed
    lb = LetterBox((160, 160))
    lbp = []
    _capture(lb, "get_params", lbp)
    padded = lb({"img": img.copy(), "cls": rows.reshape(-1, 1), "instances": _instances(boxes, "xywh", True)})
    pin = padded["instances"]
    pin.convert_bbox("xyxy")
    out2, p2 = _perspective(padded["img"], pin.bboxes.copy(), 3, PERSPECTIVE["default"], cls=rows)
    kept2 = _store_warp(t, "perspective_nomosaic.letterbox_first", out2, p2, n)
    top = lbp[0]["top"]
    pad = np.array([[1, 0, lbp[0]["left"]], [0, 1, top], [0, 0, 1]], dtype=np.float64)
    m_raw = p2["M"].astype(np.float64) @ pad
    info["perspective_nomosaic"] = {
        "params": PERSPECTIVE["default"], "python_random_seed": 3, "size_wh": [160, 160],
        "input_hw": list(img.shape[:2]), "C_8_4_190": [-img.shape[1] / 2, -img.shape[0] / 2],
        "letterbox_first": {"top": top, "bottom": lbp[0]["bottom"], "left": lbp[0]["left"], "C": [-80.0, -80.0]},
        "translation_difference_px": (p["M"].astype(np.float64)[:2, 2] - m_raw[:2, 2]).tolist(),
        "kept": _kept_mask(kept_rows, n).tolist(), "kept_letterbox_first": _kept_mask(kept2, n).tolist(),
        "images_equal": bool((out["img"] == out2["img"]).all()),
    }


def _hsv(img, t, info):
    import cv2
    from ultralytics.data.augment import RandomHSV

    hsv = RandomHSV(hgain=0.015, sgain=0.7, vgain=0.4)
    draws, luts = [], []
    uniform, lut_fn = np.random.uniform, cv2.LUT

    def rec_uniform(*a, **k):
        v = uniform(*a, **k)
        draws.append(v.copy())
        return v

    def rec_lut(src, lut, *a, **k):
        luts.append((src.copy(), lut.copy()))
        return lut_fn(src, lut, *a, **k)

    np.random.seed(0)
    np.random.uniform, cv2.LUT = rec_uniform, rec_lut
    try:
        out = hsv({"img": img.copy()})
    finally:
        np.random.uniform, cv2.LUT = uniform, lut_fn
    assert len(draws) == 1 and len(luts) == 1
    r = draws[0] * np.array([0.015, 0.7, 0.4])
    t["hsv.r"] = r.astype(np.float64)
    t["hsv.lut"] = luts[0][1].reshape(256, 3)
    t["hsv.im_hsv"] = luts[0][0]
    t["hsv.output"] = out["img"]
    info["hsv"] = {"gains": [0.015, 0.7, 0.4], "numpy_seed": 0, "uniform_raw": draws[0].tolist()}


def _pad_points(polys):
    k = max(len(p) for p in polys)
    out = np.zeros((len(polys), k, 2), dtype=np.float32)
    for i, p in enumerate(polys):
        out[i, : len(p)] = p
    return out, np.array([len(p) for p in polys], dtype=np.int64)


def _segments(t, tmp):
    from ultralytics.data.utils import verify_image_label
    from ultralytics.utils.ops import segment2box

    polys = [np.array(p, dtype=np.float32) for p in SEG2BOX.values()]
    t["segment2box.points"], t["segment2box.npoints"] = _pad_points(polys)
    t["segment2box.boxes"] = np.stack([segment2box(p, 160, 120) for p in polys]).astype(np.float32)

    import cv2

    im_file = os.path.join(tmp, "poly.png")
    cv2.imwrite(im_file, np.full((32, 32, 3), 114, np.uint8))
    lb_file = os.path.join(tmp, "poly.txt")
    with open(lb_file, "w") as f:
        for c, pts in POLY_ROWS:
            f.write(" ".join([str(c)] + [f"{v:g}" for xy in pts for v in xy]) + "\n")
    res = verify_image_label((im_file, lb_file, "", False, 80, 0, 0, False))
    _, lb, _, segments, _, nm, nf, ne, nc, msg = res
    assert nc == 0, msg
    t["polylabel.points"], t["polylabel.npoints"] = _pad_points([np.array(p, np.float32) for _, p in POLY_ROWS])
    t["polylabel.cls"] = lb[:, 0].astype(np.float32)
    t["polylabel.boxes_xywhn"] = lb[:, 1:5].astype(np.float32)
    for s, (_, pts) in zip(segments, POLY_ROWS):
        assert np.array_equal(s, np.array(pts, np.float32))


def _segperspective(img, t, info):
    from ultralytics.utils.ops import resample_segments

    segs = np.stack(resample_segments([np.array(p, dtype=np.float32) for p in SEGP], n=100), 0).astype(np.float32)
    boxes = np.stack([np.concatenate([s.min(0), s.max(0)]) for s in segs]).astype(np.float32)
    out, p = _perspective(img, boxes, 5, PERSPECTIVE["default"], segments=segs.copy())
    kept_rows = out["cls"].reshape(-1).astype(np.int64)
    t["segperspective.input_segments_px"] = segs
    t["segperspective.input_boxes_xyxy_px"] = boxes
    t["segperspective.M"] = p["M"].astype(np.float32)
    t["segperspective.scale"] = np.array([p["scale"]], dtype=np.float32)
    t["segperspective.kept"] = _kept_mask(kept_rows, len(segs))
    out["instances"].convert_bbox("xyxy")
    t["segperspective.output_boxes_xyxy_px"] = out["instances"].bboxes.astype(np.float32)
    t["segperspective.output_segments_px"] = out["instances"].segments.astype(np.float32)
    info["segperspective"] = {"params": PERSPECTIVE["default"], "python_random_seed": 5, "size_wh": [160, 160],
                              "resample_n": 100, "area_thr": 0.01}


def generate(out_dir):
    import cv2

    data_root = common.shared_data_root()
    src = cv2.imread(os.path.join(data_root, "coco-mini", "images", SOURCE))
    assert src is not None and src.shape == (426, 640, 3)
    t, info = {}, {}
    _letterbox(src, 640, t, info, "letterbox640")
    lb160 = _letterbox(src, 160, t, info, "letterbox160")
    _letterbox(np.ascontiguousarray(src[100:200, 200:350]), 192, t, info, "letterbox_crop192")
    info["letterbox_crop192"]["src"] = "source[100:200, 200:350]"
    t["letterbox.input_boxes_xywhn"] = np.array(LB_BOXES, dtype=np.float32)

    kpts = np.array([int(v) for v in _KPT4.split()], dtype=np.float32).reshape(5, 17, 3)
    kpts[..., :2] /= 4
    t["perspective.input_boxes_xyxy_px"] = np.array(P_BOXES, dtype=np.float32)
    t["perspective.input_keypoints_px"] = kpts
    for name, params in PERSPECTIVE.items():
        out, p = _perspective(lb160, P_BOXES, 3, params, keypoints=kpts.copy())
        kept_rows = out["cls"].reshape(-1).astype(np.int64)
        kept = _kept_mask(kept_rows, len(P_BOXES))
        out["instances"].convert_bbox("xyxy")
        t[f"perspective.{name}.M"] = p["M"].astype(np.float32)
        t[f"perspective.{name}.scale"] = np.array([p["scale"]], dtype=np.float32)
        t[f"perspective.{name}.output_img"] = out["img"]
        t[f"perspective.{name}.kept"] = kept
        t[f"perspective.{name}.output_boxes_xyxy_px"] = out["instances"].bboxes.astype(np.float32)
        t[f"perspective.{name}.output_keypoints_px"] = out["instances"].keypoints.astype(np.float32)
        info[f"perspective.{name}"] = {"params": params, "python_random_seed": 3, "size_wh": [160, 160],
                                       "kept": kept.tolist()}

    with tempfile.TemporaryDirectory() as tmp:
        ds = _build_dataset(os.path.join(tmp, "ds"), data_root)
        seed = _mosaic(ds, t, info)
        _nomosaic(ds, t, info)
        _hsv(lb160, t, info)
        _segments(t, tmp)
        _segperspective(lb160, t, info)

    meta = common.provenance(
        source_image=f"coco-mini/images/{SOURCE}, cv2.imread (BGR, uint8); 426x640",
        letterbox="LetterBox(new_shape=(S,S), auto=False, scale_fill=False, scaleup=True, center=True, stride=32, "
        "padding_value=114, interpolation=cv2.INTER_LINEAR) on labels with letterbox.input_boxes_xywhn",
        perspective="RandomPerspective(**params, size=(160,160)) of 8.4.190 on letterbox160.output, "
        "random.seed(seed) right before the call; M and scale as get_params returned them",
        info=info,
        mosaic_seed=str(seed),
        mosaic_files=MOSAIC_FILES,
        hsv="RandomHSV(hgain=0.015, sgain=0.7, vgain=0.4) on letterbox160.output, np.random.seed(0)",
        segment2box_cases=list(SEG2BOX),
        segment2box_size_wh=[160, 120],
        polylabel_rows=[[c, p] for c, p in POLY_ROWS],
        changes_vs_8_4_41=[
            "mosaic off: no LetterBox before RandomPerspective; C = -(w/2, h/2) of the load_image result, size "
            "(imgsz, imgsz): content moves by s*0.5 px when imgsz - h (or - w) is odd (perspective_nomosaic)",
            "RandomPerspective takes size=(w,h) instead of border; mosaic_border label is gone; always warps",
            "segment2box: clipped polygon extent (edge intersections, image corners inside the polygon) "
            "instead of dropping points on or outside the border",
            "Mosaic placement, LetterBox and RandomHSV arithmetic unchanged",
        ],
    )
    common.write_safetensors(os.path.join(out_dir, "augment.safetensors"), t, meta)
