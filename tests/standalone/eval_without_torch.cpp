// The COCO evaluator as a library of its own: this program links detrain_eval alone (no
// LibTorch, no OpenCV), so it builds only while the evaluator and its JSON code need neither.
// It evaluates a synthetic ground truth against detections generated from it, once directly
// and once after a JSON round trip of both files, and fails unless the two agree exactly and
// the numbers are sane.
#include <cstdio>

#include "eval/coco_eval.h"
#include "eval/coco_json.h"
#include "eval/coco_synth.h"

using namespace detrain::eval;

int main() {
  SynthGtOptions gt_options;
  gt_options.images = 200;
  const CocoGroundTruth gt = synth_ground_truth(gt_options);
  const CocoDetections dets = synth_detections(gt, SynthDetOptions{});
  const CocoParams params = CocoParams::defaults(IouType::kBbox);
  const CocoEvalResult direct = evaluate_coco(gt, dets, params);

  const CocoGroundTruth gt_again = parse_ground_truth_json(ground_truth_to_json(gt), "gt");
  const CocoDetections dets_again =
      parse_results_json(results_to_json(dets), "results", IouType::kBbox);
  const CocoEvalResult round_trip = evaluate_coco(gt_again, dets_again, params);

  if (direct.stats.size() != 12 || direct.stats != round_trip.stats) {
    std::printf("evaluator without LibTorch: stats differ after the JSON round trip\n");
    return 1;
  }
  // 80 % of the objects get a jittered hit: AP is well inside (0, 1).
  if (!(direct.stats[0] > 0.1 && direct.stats[0] < 1.0)) {
    std::printf("evaluator without LibTorch: implausible AP %.4f\n", direct.stats[0]);
    return 1;
  }
  std::printf("evaluator without LibTorch: AP %.4f AP50 %.4f over %zu images\n", direct.stats[0],
              direct.stats[1], gt.image_ids.size());
  return 0;
}
