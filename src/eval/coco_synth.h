// Deterministic synthetic COCO cases for the evaluator's bench and tests: a ground truth shaped
// like COCO val (sizes across small/medium/large, ~1% crowd, person-heavy categories) and
// detections generated from any ground truth (jittered hits, duplicates, wrong classes, false
// positives, optional keypoints). Same options + seed give the same bytes on every machine (no
// libm transcendental functions are used).
#pragma once

#include <cstdint>

#include "eval/coco_types.h"

namespace detrain::eval {

struct SynthGtOptions {
  int images = 5000;
  int categories = 80;  // COCO's 80 ids (1..90 with gaps), then 91, 92, ...
  double objects_per_image = 7.2;
  double crowd_fraction = 0.01;
  uint64_t seed = 0;
  // > 0: every annotation carries this many keypoints (a person_keypoints-like file: points
  // inside the box, ~35% of them unlabelled, ~10% of the people with none labelled at all, who
  // then count as ignored). 0 leaves the output exactly as without the option.
  int keypoints = 0;
};

CocoGroundTruth synth_ground_truth(const SynthGtOptions& options);

struct SynthDetOptions {
  uint64_t seed = 1;
  int dets_per_image = 0;        // > 0: exactly this many per image (false positives fill up,
                                 // the lowest scores are cut); 0: natural count
  double hit_rate = 0.8;         // chance that a GT gets a detection near it
  double duplicate_rate = 0.15;  // chance of a second, lower-scored detection on a hit GT
  double wrong_class_rate = 0.05;
  double false_positives_per_image = 3.0;  // natural mode only
  double unknown_category_rate = 0.0;      // results with a category absent from the GT
  int score_decimals = 0;  // > 0: scores rounded to this many decimals (ties); 0: float32 values
  int box_decimals = 2;    // box coordinates rounded to this many decimals; 0: exact doubles
  bool keypoints = false;  // add K keypoints per result (K from the GT)
  bool keypoints_with_box = true;  // keypoint results carry a box (else boxes from the extent)
};

CocoDetections synth_detections(const CocoGroundTruth& gt, const SynthDetOptions& options);

}  // namespace detrain::eval
