#!/usr/bin/env python3
"""Writes a COCO-train-sized instances file for scale measurements (records parse, records cache).

The layout is COCO's (info, licenses, images, annotations with polygon segmentation, categories);
the numbers are random but fixed by --seed. Defaults: 118,287 images and 709,000 annotations with
polygons of 8-40 points, about the size of instances_train2017.json. Standard library only.

    scripts/coco_like_annotations.py /tmp/coco_like/instances_train.json
"""
import argparse
import json
import random


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="output JSON file")
    parser.add_argument("--images", type=int, default=118287)
    parser.add_argument("--annotations", type=int, default=709000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    category_ids = [i for i in range(1, 91) if i not in (12, 26, 29, 30, 45, 66, 68, 69, 71, 83)]
    with open(args.out, "w") as f:
        f.write('{"info": {"description": "COCO-like, generated"}, "licenses": [], "images": [')
        for i in range(args.images):
            image = {"license": 1, "file_name": "%012d.jpg" % (i + 1), "coco_url": "",
                     "height": rng.choice((480, 427, 640, 512)), "width": 640,
                     "date_captured": "2013-11-14 17:02:52", "flickr_url": "", "id": i + 1}
            f.write(("," if i else "") + json.dumps(image))
        f.write('], "annotations": [')
        for a in range(args.annotations):
            x, y = rng.uniform(0, 500), rng.uniform(0, 350)
            w, h = rng.uniform(2, 140), rng.uniform(2, 130)
            points = []
            for _ in range(rng.randint(8, 40)):
                points += [round(x + rng.uniform(0, w), 2), round(y + rng.uniform(0, h), 2)]
            annotation = {"segmentation": [points], "area": round(w * h * 0.6, 4), "iscrowd": 0,
                          "image_id": rng.randint(1, args.images),
                          "bbox": [round(x, 2), round(y, 2), round(w, 2), round(h, 2)],
                          "category_id": rng.choice(category_ids), "id": a + 1}
            f.write(("," if a else "") + json.dumps(annotation))
        f.write('], "categories": [')
        f.write(",".join(json.dumps({"supercategory": "thing", "id": c, "name": "class%d" % c})
                         for c in category_ids))
        f.write("]}\n")


if __name__ == "__main__":
    main()
