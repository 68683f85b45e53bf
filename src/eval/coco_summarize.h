// summarize(): pycocotools' stats vectors from the accumulated arrays, with its hardcoded
// maxDets (100 for bbox AP, 20 for every keypoint stat) and numpy's summation order, and the
// printed summary lines in its exact text format.
#pragma once

#include <string>
#include <vector>

#include "eval/coco_eval.h"

namespace detrain::eval {

// One line of pycocotools' summary: which slice of precision (AP) or recall (AR) it averages.
struct StatSpec {
  bool average_precision = true;
  double iou_threshold = -1;  // -1: every threshold (printed as first:last)
  std::string area_label;     // looked up in params.area_ranges by label
  int64_t max_dets = 0;       // looked up in params.max_dets; -1 when pycocotools would fail
};

// The 12 (bbox) or 10 (keypoints) stats in pycocotools' order. bbox reads maxDets[0..2] of the
// sorted list; a list shorter than 3 (pycocotools: IndexError) yields max_dets -1 (stat -1).
std::vector<StatSpec> stat_specs(const CocoParams& params);

// Every stat of stat_specs(result.params): the mean of the selected entries > -1 in numpy's
// summation order, or -1 when there are none (no category with a non-ignored GT in that slice).
std::vector<double> summarize_stats(const CocoEvalResult& result);

// " Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.123"
std::string format_stat_line(const CocoParams& params, const StatSpec& spec, double value);

}  // namespace detrain::eval
