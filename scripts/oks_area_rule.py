"""Which OKS area rule for YOLO-label pose sets (docs/evaluator.md, "Three keypoint APs").

    .venv-ref/bin/python scripts/oks_area_rule.py ../shared/data/coco-mini SEED

Scores the same noisy keypoint predictions (two per labelled person, noise 2-12 % of the box's
square root, random scores) against coco-mini's person keypoints with COCO's segment areas and
with the area estimated from the box (w*h, 0.53 w*h, the split's median ratio), through hotcoco's
pycocotools-compatible COCOeval, and prints each keypoint AP and its difference from COCO's.
"""
import contextlib, copy, io, json, os, sys, tempfile
import numpy as np
from hotcoco import COCO, COCOeval

TMP = tempfile.mkdtemp()


def ap(gt_dict, preds):
    path = os.path.join(TMP, 'gt.json')
    with open(path, 'w') as f: json.dump(gt_dict, f)
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(path); dt = gt.loadRes(preds)
        e = COCOeval(gt, dt, 'keypoints'); e.evaluate(); e.accumulate(); e.summarize()
    return e.stats[0]

root = sys.argv[1]
for split in ('val', 'train'):
    d = json.load(open(f'{root}/annotations/person_keypoints_{split}.json'))
    rng = np.random.default_rng(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    preds = []
    for a in d['annotations']:
        if a['iscrowd'] or a['num_keypoints'] == 0: continue
        k = np.array(a['keypoints'], float).reshape(-1, 3)
        scale = np.sqrt(a['bbox'][2] * a['bbox'][3])
        for rep in range(2):  # two noisy copies per person, noise 2-12 % of sqrt(box area)
            noise = rng.normal(0, rng.uniform(0.02, 0.12) * scale, size=(17, 2))
            kk = k.copy(); kk[:, :2] += noise; kk[:, 2] = 1
            preds.append({'image_id': a['image_id'], 'category_id': 1, 'bbox': a['bbox'],
                          'keypoints': kk.ravel().tolist(), 'score': float(rng.uniform())})
    people = [a for a in d['annotations'] if not a['iscrowd'] and a['num_keypoints'] > 0]
    ratios = np.array([a['area'] / (a['bbox'][2] * a['bbox'][3]) for a in people])
    rules = [('segment area (COCO)', None), ('box w*h', 1.0), ('0.53 w*h', 0.53),
             (f'median ratio {np.median(ratios):.3f} w*h', float(np.median(ratios)))]
    base = None
    for name, c in rules:
        g = copy.deepcopy(d)
        if c is not None:
            for a in g['annotations']: a['area'] = a['bbox'][2] * a['bbox'][3] * c
        v = ap(g, preds)
        base = v if base is None else base
        print(f'{split}: {len(people)} people, {len(preds)} predictions: {name:28s} keypoint AP {v:.4f} ({v - base:+.4f})')
