// Shared inputs of the COCO evaluator tests: small ground-truth/detection builders, the
// deterministic end-to-end cases whose expected stats come from pycocotools, and a hook that
// keeps each case's JSON inputs (set DETRAIN_EVAL_KEEP_INPUTS=DIR) so those expectations can be
// regenerated with pycocotools outside the project.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "eval/coco_eval.h"
#include "eval/coco_types.h"

namespace detrain::test {

// A box annotation with explicit area and crowd flag.
void add_gt_box(eval::CocoGroundTruth& gt, int64_t id, int64_t image, int64_t category,
                eval::BoxXywh box, double area, bool crowd = false);

// One end-to-end case: GT and results as JSON text (what pycocotools reads), and how to score.
struct EvalCase {
  std::string name;
  std::string gt_json;
  std::string results_json;
  eval::IouType iou_type = eval::IouType::kBbox;
  bool use_cats = true;
};

// Writes <DETRAIN_EVAL_KEEP_INPUTS>/<name>/{gt,results}.json when that variable is set.
void keep_inputs(const EvalCase& c);

// Loads both JSON texts through the project's loaders and evaluates with default parameters.
eval::CocoEvalResult run_case(const EvalCase& c, int threads = 0);

// The coco-mini cases (nullopt, after a visible skip, when the shared data is absent).
std::optional<EvalCase> coco_mini_case(const std::string& name);

// A COCO-val-like synthetic case: 300 images, 80 categories, ~1% crowd, 100 detections per image.
EvalCase synthetic_case();

// The handcrafted quirk cases (bbox and keypoints; see coco_test_cases.cpp).
EvalCase quirks_bbox_case(bool use_cats);
EvalCase quirks_keypoints_case(bool with_box);

}  // namespace detrain::test
