// The per-class table `detrain val` prints, as Ultralytics' validator prints it (class, images,
// instances, P, R, mAP50, mAP50-95; box and, for pose models, keypoints), from the COCO
// evaluator's arrays: P and R are the point of the class's IoU-0.5 precision/recall curve with
// the highest F1, mAP50 and mAP50-95 the class's COCO AP at IoU 0.5 and over 0.5:0.95 (area
// all, largest maxDets). The "all" row holds the class means and COCO's stats[1], stats[0], so
// it reads as results.csv does. No LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "eval/coco_eval.h"

namespace detrain::infer {

// Precision and recall at the highest-F1 point of category index k's IoU-0.5 curve (area all,
// largest maxDets); {0, 0} when no point of the curve is reached. The class means of these are
// results.csv's metrics/precision and metrics/recall.
std::pair<double, double> best_f1_point(const eval::CocoEvalResult& result, int k);

// The "all" row, then (with more than one class) one row per class with ground truth (images
// holding it, its instances). `gt_classes` holds, per validated image, the contiguous class
// index of each of its targets (crowd regions excluded). `names` and `category_ids` are the data
// set's, in class-index order.
std::string class_table(const eval::CocoEvalResult& box, const eval::CocoEvalResult* keypoints,
                        const std::vector<std::vector<int32_t>>& gt_classes,
                        const std::vector<std::string>& names,
                        const std::vector<int64_t>& category_ids);

}  // namespace detrain::infer
