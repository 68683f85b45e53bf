// Reports of a COCO evaluation: the stats JSON written by `detrain eval --json-out` (full
// double precision, shortest round-trip form) and the per-category table of `--per-class`.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "eval/coco_eval.h"

namespace detrain::eval {

// {"iou_type", "stats": [...], "per_category_ap": {"<cat id>": ap}, "timing_s": {...},
//  "counts": {...}}. per-category AP is -1 for categories without GT.
// `process`, when given, adds "process": {...} (figures of the whole run, e.g. its peak RSS).
std::string stats_json(const CocoEvalResult& result,
                       const std::vector<std::pair<std::string, double>>& timing_s,
                       const std::vector<std::pair<std::string, double>>& process = {});

// This process image's peak resident set in bytes (VmHWM; 0 when /proc is unavailable). Unlike
// getrusage's ru_maxrss, exec resets it, so a child that a large process spawned (the bench
// spawns `detrain eval`) does not report its parent's memory.
int64_t process_peak_rss_bytes();

// One row per category: name, id, non-ignored GT count, AP, AP50, AP75 (three decimals; "-"
// without GT). Names come from `gt` (empty when unknown).
std::string per_category_table(const CocoEvalResult& result, const CocoGroundTruth& gt);

// Shortest decimal that reads back to the same double (e.g. 0.1, 0.30000000000000004).
std::string shortest_double(double value);

}  // namespace detrain::eval
