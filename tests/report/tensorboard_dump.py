"""Reads a run directory's TensorBoard event files with TensorBoard's own reader and prints what
it keeps as JSON into OUT_JSON, for tests/report/test_tensorboard.cpp.

    tensorboard_dump.py RUN_DIR OUT_JSON [IMAGE_DIR]

EventAccumulator (tensorboard 2.18, .venv-test) reads every event file of the directory in name
order and applies TensorBoard's purge rules (a SessionLog START drops earlier events at or past
its step; this reader purges scalars and images, not the text plugin's tensors, which the
TensorBoard server's own loaders do purge). Output: {"scalars": {tag: [[step, value], ...]},
"text": {tag: [[step, text], ...]}, "images": {tag: [{"step", "width", "height", "file"}, ...]}};
NaN values become null. With
IMAGE_DIR each image's encoded bytes are written there (the "file" of its row).
"""

import json
import math
import os
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def main():
    run_dir = sys.argv[1]
    out_json = sys.argv[2]
    image_dir = sys.argv[3] if len(sys.argv) > 3 else None
    acc = EventAccumulator(run_dir, size_guidance={"scalars": 0, "images": 0, "tensors": 0})
    acc.Reload()
    tags = acc.Tags()
    out = {"scalars": {}, "text": {}, "images": {}}
    for tag in tags["scalars"]:
        out["scalars"][tag] = [
            [e.step, None if math.isnan(e.value) else e.value] for e in acc.Scalars(tag)
        ]
    for tag in tags["tensors"]:
        out["text"][tag] = [
            [e.step, b"".join(e.tensor_proto.string_val).decode("utf-8")] for e in acc.Tensors(tag)
        ]
    for tag in tags["images"]:
        rows = []
        for n, e in enumerate(acc.Images(tag)):
            row = {"step": e.step, "width": e.width, "height": e.height, "file": ""}
            if image_dir:
                row["file"] = os.path.join(image_dir, f"{tag.replace('/', '_')}.{n}")
                with open(row["file"], "wb") as f:
                    f.write(e.encoded_image_string)
            rows.append(row)
        out["images"][tag] = rows
    with open(out_json, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
