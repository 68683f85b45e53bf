// Reports of a COCO evaluation: the stats JSON written by `detrain eval --json-out` (full
// double precision, shortest round-trip form) and the per-category table of `--per-class`.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "eval/coco_eval.h"

namespace detrain::eval {

// {"iou_type", "stats": [...], "per_category_ap": {"<cat id>": ap}, "timing_s": {...},
//  "counts": {...}}. per-category AP is -1 for categories without GT.
std::string stats_json(const CocoEvalResult& result,
                       const std::vector<std::pair<std::string, double>>& timing_s);

// One row per category: name, id, non-ignored GT count, AP, AP50, AP75 (three decimals; "-"
// without GT). Names come from `gt` (empty when unknown).
std::string per_category_table(const CocoEvalResult& result, const CocoGroundTruth& gt);

// Shortest decimal that reads back to the same double (e.g. 0.1, 0.30000000000000004).
std::string shortest_double(double value);

}  // namespace detrain::eval
