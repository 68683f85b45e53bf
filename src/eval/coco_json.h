// COCO JSON in and out for the evaluator: ground-truth files through coco/'s annotation reader
// (the loader's too), results files parsed straight into flat columns (no DOM) with
// pycocotools' loadRes rules (the first result decides between boxes and keypoints); writers
// for results and ground truth (bench inputs, trainer output).
#pragma once

#include <string>

#include "coco/annotations_json.h"
#include "coco/json_cursor.h"
#include "eval/coco_types.h"

namespace detrain::eval {

// How the evaluator reads a ground-truth file: `categories` required, every other field only
// where pycocotools needs it (image file names and sizes skipped, any K keypoints).
coco::ReadOptions ground_truth_read_options();

// Parses a COCO ground-truth JSON object (`images`, `annotations`, `categories`). Malformed JSON
// is a DataError naming `source` and the byte offset; a record without `id` (or an annotation
// without `image_id`/`category_id`) names its position. Optional annotation fields are recorded
// in ann_fields and checked when the annotation is evaluated.
CocoGroundTruth parse_ground_truth_json(coco::JsonInput text, const std::string& source);
CocoGroundTruth load_ground_truth_json(const std::string& path);

// Parses a results list. `iou_type` says what is needed: bbox evaluation skips keypoints unless
// the first result makes this a keypoint-only file (then boxes come from the keypoint extent);
// keypoint evaluation requires keypoints on every result. `[]` gives an empty set. Large files
// are parsed in chunks on `threads` threads (0: every core); the result is the same.
CocoDetections parse_results_json(coco::JsonInput text, const std::string& source, IouType iou_type,
                                  int threads = 0);
CocoDetections load_results_json(const std::string& path, IouType iou_type, int threads = 0);

// Results as pycocotools' json.dump writes them ([{"image_id": .., "category_id": .., "bbox":
// [..], "score": ..}, ...]); doubles in shortest round-trip form. Keypoints are written when
// the set has them; `with_bbox` false writes keypoint-only results.
std::string results_to_json(const CocoDetections& detections, bool with_bbox = true);
// A minimal ground-truth file (images, annotations with bbox/area/iscrowd and keypoints when
// present, categories) that pycocotools loads.
std::string ground_truth_to_json(const CocoGroundTruth& gt);

}  // namespace detrain::eval
