// The COCO evaluator: pycocotools' COCOeval (evaluate, accumulate, summarize) for `bbox` and
// `keypoints`, reproducing its numbers to the bit, quirks included
// (../shared/docs/cocoeval-spec.md). Works on plain structs so the trainer can hand detections over
// in memory; the JSON loaders (coco_json.h) fill the same structs. Deliberate differences: an empty
// results list gives AP 0 where GT exists (pycocotools crashes), keypoints with use_cats = false is
// refused (pycocotools silently scores 0), duplicate category ids are refused with use_cats =
// false.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "eval/coco_memory.h"
#include "eval/coco_types.h"

namespace detrain::eval {

struct CocoEvalCounts {
  size_t images = 0;                    // images evaluated
  size_t categories = 0;                // K (1 with use_cats = false)
  size_t gt_annotations = 0;            // GT annotations in evaluated cells
  size_t detections = 0;                // results read
  size_t detections_in_cells = 0;       // results that entered a cell (before the maxDets cut)
  size_t dropped_unknown_category = 0;  // results whose category_id is no GT category
  int64_t first_unknown_category = 0;   // the first such category id (for messages)
  size_t cells = 0;                     // (image, category) pairs holding a GT or a detection
};

// Wall seconds per phase, and the CPU seconds of all threads over the same span (on a shared
// machine the CPU time still shows the work done when other load stretches the wall clock).
struct CocoEvalTiming {
  double prepare_s = 0;     // indexing detections into cells
  double evaluate_s = 0;    // IoU/OKS matrices and per-cell matching
  double accumulate_s = 0;  // per-category precision/recall
  double summarize_s = 0;   // the stats
  double prepare_cpu_s = 0, evaluate_cpu_s = 0, accumulate_cpu_s = 0, summarize_cpu_s = 0;
};

struct CocoEvalResult {
  CocoParams params;                  // as evaluated: max_dets sorted ascending
  std::vector<int64_t> image_ids;     // evaluated images, ascending
  std::vector<int64_t> category_ids;  // K categories of the arrays ({-1} with use_cats = false)
  int num_iou = 0, num_recall = 0, num_categories = 0, num_areas = 0, num_max_dets = 0;
  // The three arrays are allocated without zero-filling (every entry is then written once, by
  // the thread that computes it): at COCO's sizes they are the largest the evaluator writes.
  FillBuffer<double> precision;          // [T, R, K, A, M]; -1 where the category has no GT
  FillBuffer<double> recall;             // [T, K, A, M]
  FillBuffer<double> scores;             // [T, R, K, A, M]: detection score at each sampled point
  std::vector<double> stats;             // 12 (bbox) or 10 (keypoints), pycocotools' order
  std::vector<int64_t> gt_per_category;  // [K] non-ignored GTs in the first area range ("all")
  CocoEvalCounts counts;
  CocoEvalTiming timing;

  double precision_at(int t, int r, int k, int a, int m) const;
  double recall_at(int t, int k, int a, int m) const;
  // Mean precision over IoU thresholds and recall points for category index k at area "all"
  // (first range) and the largest maxDets: detectron2's per-category AP. With
  // `iou_threshold` >= 0 only thresholds equal to it count (AP50: 0.5). -1 without GT.
  double category_ap(int k, double iou_threshold = -1) const;
  // pycocotools' printed summary, one line per stat (" Average Precision  (AP) @[ ... ] = 0.xxx").
  std::vector<std::string> summary_lines() const;
};

struct CocoEvalOptions {
  int threads = 0;  // 0: every core; results never depend on this
};

// Holds the ground truth indexed once, for repeated evaluation (one call per epoch).
class CocoEvaluator {
 public:
  // Validates the parameters against the ground truth (ConfigError/DataError naming what is
  // wrong) and indexes it. `gt` must outlive the evaluator.
  CocoEvaluator(const CocoGroundTruth& gt, CocoParams params, CocoEvalOptions options = {});
  ~CocoEvaluator();
  CocoEvaluator(CocoEvaluator&&) noexcept;
  CocoEvaluator& operator=(CocoEvaluator&&) noexcept;

  // Evaluates one set of results. A result whose image is not in the ground truth is a
  // DataError naming it (pycocotools asserts); unknown categories are dropped and counted.
  CocoEvalResult evaluate(const CocoDetections& detections) const;

  const CocoParams& params() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Checks parameters that need no data (ConfigError naming the problem); the evaluator also
// checks them against the ground truth. Lets a caller refuse a bad request before loading files.
void validate_coco_params(const CocoParams& params);

// One-shot convenience: CocoEvaluator(gt, params, options).evaluate(detections).
CocoEvalResult evaluate_coco(const CocoGroundTruth& gt, const CocoDetections& detections,
                             const CocoParams& params, CocoEvalOptions options = {});

}  // namespace detrain::eval
