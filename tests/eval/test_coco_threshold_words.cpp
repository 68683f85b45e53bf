// Precision, recall and scores at one IoU threshold depend only on the matches at that threshold,
// and at one maxDets only on the detections it keeps. So adding thresholds (past 16 they need a
// second outcome word, a path COCO's 10 never take) or maxDets values must leave every entry of
// the thresholds and maxDets already there bit-identical. Checked on a synthetic COCO-like set
// with crowds and score ties, with and without categories.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>

#include "eval/coco_eval.h"
#include "eval/coco_synth.h"

using detrain::eval::CocoEvalResult;
using detrain::eval::CocoParams;
using detrain::eval::IouType;

namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Every (t, r, k, a, m) of `base` equals `wide`'s at the same threshold value and maxDets value.
void check_embedded(const CocoEvalResult& base, const CocoEvalResult& wide) {
  const auto& bt = base.params.iou_thresholds;
  const auto& wt = wide.params.iou_thresholds;
  const auto& bm = base.params.max_dets;
  const auto& wm = wide.params.max_dets;
  REQUIRE(base.num_categories == wide.num_categories);
  REQUIRE(base.num_areas == wide.num_areas);
  size_t compared = 0, mismatches = 0;
  for (int t = 0; t < base.num_iou; ++t) {
    const auto wt_index =
        static_cast<int>(std::find(wt.begin(), wt.end(), bt[static_cast<size_t>(t)]) - wt.begin());
    REQUIRE(wt_index < wide.num_iou);
    for (int m = 0; m < base.num_max_dets; ++m) {
      const auto wm_index = static_cast<int>(
          std::find(wm.begin(), wm.end(), bm[static_cast<size_t>(m)]) - wm.begin());
      REQUIRE(wm_index < wide.num_max_dets);
      for (int k = 0; k < base.num_categories; ++k)
        for (int a = 0; a < base.num_areas; ++a) {
          ++compared;
          mismatches +=
              !same_bits(base.recall_at(t, k, a, m), wide.recall_at(wt_index, k, a, wm_index));
          for (int r = 0; r < base.num_recall; ++r) {
            const auto bi = static_cast<size_t>(
                (((t * base.num_recall + r) * base.num_categories + k) * base.num_areas + a) *
                    base.num_max_dets +
                m);
            const auto wi = static_cast<size_t>(
                (((wt_index * wide.num_recall + r) * wide.num_categories + k) * wide.num_areas +
                 a) *
                    wide.num_max_dets +
                wm_index);
            mismatches += !same_bits(base.precision[bi], wide.precision[wi]);
            mismatches += !same_bits(base.scores[bi], wide.scores[wi]);
          }
        }
    }
  }
  CHECK(compared > 0);
  CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("eval: more thresholds (two outcome words) and maxDets keep the others' curves",
          "[eval][unit]") {
  detrain::eval::SynthGtOptions gt_options;
  gt_options.images = 300;
  gt_options.categories = 12;
  gt_options.crowd_fraction = 0.05;
  const auto gt = detrain::eval::synth_ground_truth(gt_options);
  detrain::eval::SynthDetOptions det_options;
  det_options.dets_per_image = 40;
  det_options.score_decimals = 2;  // ties across cells and images
  const auto dets = detrain::eval::synth_detections(gt, det_options);

  for (const bool use_cats : {true, false}) {
    CAPTURE(use_cats);
    CocoParams base = CocoParams::defaults(IouType::kBbox);
    base.use_cats = use_cats;
    CocoParams wide = base;
    // 12 more thresholds first, then COCO's ten (the same doubles): 22 in two 16-bit outcome
    // words, COCO's in both (positions 12..21).
    wide.iou_thresholds.clear();
    for (int i = 0; i < 12; ++i) wide.iou_thresholds.push_back(0.05 + 0.025 * i);
    wide.iou_thresholds.insert(wide.iou_thresholds.end(), base.iou_thresholds.begin(),
                               base.iou_thresholds.end());
    wide.max_dets = {1, 2, 5, 10, 30, 100};
    const auto r_base = detrain::eval::CocoEvaluator(gt, base, {2}).evaluate(dets);
    const auto r_wide = detrain::eval::CocoEvaluator(gt, wide, {3}).evaluate(dets);
    REQUIRE(r_wide.num_iou == 22);
    check_embedded(r_base, r_wide);
  }
}
