// The evaluator's numbers never depend on its thread count: every end-to-end case (bbox and
// keypoints, with and without categories, coco-mini where present, and a keypoint case large
// enough for the results reader to parse in parallel chunks) read and scored with 1, 2, 3 and 7
// threads gives the same columns, the same twelve (ten) stats, the same precision / recall /
// scores arrays and the same per-class table, compared exactly.
#include <catch2/catch.hpp>

#include "coco_test_cases.h"
#include "eval/coco_json.h"
#include "eval/coco_report.h"
#include "eval/coco_synth.h"

using detrain::eval::CocoDetections;
using detrain::eval::CocoEvalResult;
using detrain::eval::IouType;
using detrain::test::EvalCase;

namespace {

struct Scored {
  CocoDetections dets;
  CocoEvalResult result;
  std::string table;
};

Scored score_with(const EvalCase& c, int threads) {
  Scored s;
  const auto gt = detrain::eval::parse_ground_truth_json(c.gt_json, c.name + "/gt.json");
  s.dets = detrain::eval::parse_results_json(c.results_json, c.name + "/results.json", c.iou_type,
                                             threads);
  auto params = detrain::eval::CocoParams::defaults(c.iou_type);
  params.use_cats = c.use_cats;
  s.result = detrain::eval::CocoEvaluator(gt, params, {threads}).evaluate(s.dets);
  s.table = detrain::eval::per_category_table(s.result, gt);
  return s;
}

void check_thread_invariance(const EvalCase& c) {
  const Scored one = score_with(c, 1);
  REQUIRE(!one.result.stats.empty());
  for (int threads : {2, 3, 7}) {
    INFO(c.name << " with " << threads << " threads");
    const Scored many = score_with(c, threads);
    CHECK(many.dets.image_id == one.dets.image_id);
    CHECK(many.dets.category_id == one.dets.category_id);
    CHECK(many.dets.score == one.dets.score);
    CHECK(many.dets.area == one.dets.area);
    CHECK(many.dets.keypoints == one.dets.keypoints);
    CHECK(many.result.stats == one.result.stats);
    CHECK(many.result.precision == one.result.precision);
    CHECK(many.result.recall == one.result.recall);
    CHECK(many.result.scores == one.result.scores);
    CHECK(many.result.gt_per_category == one.result.gt_per_category);
    CHECK(many.table == one.table);
  }
}

// 600 images of people with 17 keypoints, 20 results each: ~5 MB of results JSON, several
// chunks for the parallel reader.
EvalCase synthetic_keypoints_case() {
  detrain::eval::SynthGtOptions gt_options;
  gt_options.images = 600;
  gt_options.categories = 1;
  gt_options.keypoints = 17;
  const auto gt = detrain::eval::synth_ground_truth(gt_options);
  detrain::eval::SynthDetOptions det_options;
  det_options.dets_per_image = 20;
  det_options.score_decimals = 2;  // ties across images
  det_options.keypoints = true;
  EvalCase c;
  c.name = "synthetic_keypoints";
  c.iou_type = IouType::kKeypoints;
  c.gt_json = detrain::eval::ground_truth_to_json(gt);
  c.results_json = detrain::eval::results_to_json(detrain::eval::synth_detections(gt, det_options));
  return c;
}

}  // namespace

TEST_CASE("coco bbox results are identical for any thread count", "[unit][eval]") {
  check_thread_invariance(detrain::test::synthetic_case());
  check_thread_invariance(detrain::test::quirks_bbox_case(true));
  check_thread_invariance(detrain::test::quirks_bbox_case(false));
  for (const char* name : {"instances_bbox", "instances_bbox_nocats", "instances_ties"})
    if (const auto c = detrain::test::coco_mini_case(name)) check_thread_invariance(*c);
}

TEST_CASE("coco keypoint results are identical for any thread count", "[unit][eval]") {
  check_thread_invariance(detrain::test::quirks_keypoints_case(true));
  check_thread_invariance(detrain::test::quirks_keypoints_case(false));
  const EvalCase big = synthetic_keypoints_case();
  REQUIRE(big.results_json.size() > (size_t{4} << 20));  // the reader's chunks are >= 2 MiB
  check_thread_invariance(big);
  for (const char* name : {"keypoints_with_box", "keypoints_only"})
    if (const auto c = detrain::test::coco_mini_case(name)) check_thread_invariance(*c);
}

TEST_CASE("coco synthetic keypoint ground truth looks like person_keypoints", "[unit][eval]") {
  detrain::eval::SynthGtOptions options;
  options.images = 200;
  options.categories = 1;
  const auto plain = detrain::eval::synth_ground_truth(options);
  options.keypoints = 17;
  const auto gt = detrain::eval::synth_ground_truth(options);
  // The option adds points and leaves everything else as it was.
  CHECK(gt.keypoints_per_instance == 17);
  CHECK(gt.ann_id == plain.ann_id);
  CHECK(gt.ann_area == plain.ann_area);
  CHECK(gt.ann_iscrowd == plain.ann_iscrowd);
  size_t without_points = 0;
  for (size_t a = 0; a < gt.num_annotations(); ++a) {
    int labelled = 0;
    for (int k = 0; k < 17; ++k) {
      const double* p = &gt.ann_keypoints[(a * 17 + static_cast<size_t>(k)) * 3];
      if (p[2] == 0) continue;
      ++labelled;
      const auto& box = gt.ann_bbox[a];
      CHECK(p[0] >= box.x - 0.01);
      CHECK(p[0] <= box.x + box.w + 0.01);  // 0.01: points are rounded to two decimals
    }
    CHECK(gt.ann_num_keypoints[a] == labelled);
    without_points += labelled == 0;
  }
  // ~10 % of the people have no labelled point (ignored by OKS matching); some must exist.
  CHECK(without_points > 0);
  CHECK(without_points < gt.num_annotations() / 4);
}
