// The evaluator's public API on hand-worked cases: precision/recall sampling, maxDets cuts,
// score-tie order (inside and across images), empty cells and categories, empty results, GT
// id 0, custom parameters, bad inputs.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "coco_test_cases.h"
#include "common/errors.h"
#include "eval/coco_eval.h"

using namespace detrain::eval;
using detrain::test::add_gt_box;

namespace {

// 1 - 2^-52: pycocotools' precision for tp = 1, fp = 0 is 1 / (1 + 2.220446049250313e-16).
constexpr double kOneTp = 0.9999999999999998;

CocoGroundTruth two_boxes_gt() {
  CocoGroundTruth gt;
  gt.add_image(1);
  gt.add_category(1, "a");
  gt.add_category(2, "b");  // no GT: precision -1, left out of every mean
  add_gt_box(gt, 1, 1, 1, {0, 0, 10, 10}, 100);
  add_gt_box(gt, 2, 1, 1, {20, 0, 10, 10}, 100);
  return gt;
}

}  // namespace

TEST_CASE("coco precision and recall by hand", "[unit][eval]") {
  const CocoGroundTruth gt = two_boxes_gt();
  CocoDetections dets;
  dets.add(1, 1, {0, 0, 10, 10}, 0.9);    // TP (IoU 1 at every threshold)
  dets.add(1, 1, {50, 50, 10, 10}, 0.8);  // FP
  dets.add(1, 1, {20, 0, 10, 10}, 0.7);   // TP
  dets.add(1, 2, {50, 50, 10, 10}, 0.6);  // category without GT
  const auto r = evaluate_coco(gt, dets, CocoParams::defaults(IouType::kBbox));
  REQUIRE(r.num_categories == 2);
  // Precision after the first TP is 1/(1+eps); after TP, FP, TP it is 2/3 (3 + eps rounds to 3).
  // Recall 0.5 is reached at the first TP, so thresholds 0..0.50 sample 1/(1+eps), 0.51..1 2/3.
  for (int t = 0; t < 10; ++t) {
    for (int i = 0; i <= 50; ++i) CHECK(r.precision_at(t, i, 0, 0, 2) == kOneTp);
    for (int i = 51; i <= 100; ++i) CHECK(r.precision_at(t, i, 0, 0, 2) == 2.0 / 3.0);
    CHECK(r.recall_at(t, 0, 0, 2) == 1.0);
    CHECK(r.precision_at(t, 0, 1, 0, 2) == -1);  // category 2 has no GT
    CHECK(r.recall_at(t, 1, 0, 2) == -1);
    // maxDets = 1: only the 0.9 detection -> recall 0.5, nothing beyond.
    CHECK(r.recall_at(t, 0, 0, 0) == 0.5);
    CHECK(r.precision_at(t, 50, 0, 0, 0) == kOneTp);
    CHECK(r.precision_at(t, 51, 0, 0, 0) == 0.0);
  }
  // Scores at the sampled points: the detection reaching each recall threshold.
  CHECK(r.scores[0] == 0.9);
  // AP = (51 * (1 - 2^-52) + 50 * 2/3) / 101; 1e-15: numpy's pairwise sum vs this formula.
  const double ap = (51 * kOneTp + 50 * (2.0 / 3.0)) / 101;
  CHECK(r.stats[0] == Approx(ap).margin(1e-15));
  CHECK(r.stats[1] == Approx(ap).margin(1e-15));
  CHECK(r.stats[3] == Approx(ap).margin(1e-15));  // both GTs are small (area 100)
  CHECK(r.stats[4] == -1);                        // no medium GT
  CHECK(r.stats[5] == -1);
  CHECK(r.stats[6] == 0.5);  // AR@1
  CHECK(r.stats[8] == 1.0);  // AR@100
  CHECK(r.category_ap(0) == Approx(ap).margin(1e-15));
  CHECK(r.category_ap(1) == -1);
  CHECK(r.gt_per_category == std::vector<int64_t>{2, 0});
  CHECK(r.counts.cells == 2);
  CHECK(r.summary_lines()[0] ==
        " Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.835");
  CHECK(r.summary_lines()[4] ==
        " Average Precision  (AP) @[ IoU=0.50:0.95 | area=medium | maxDets=100 ] = -1.000");
  CHECK(r.summary_lines()[6] ==
        " Average Recall     (AR) @[ IoU=0.50:0.95 | area=   all | maxDets=  1 ] = 0.500");
}

TEST_CASE("coco maxDets cuts per image and category before matching", "[unit][eval]") {
  CocoGroundTruth gt;
  gt.add_image(1);
  gt.add_category(1);
  add_gt_box(gt, 1, 1, 1, {0, 0, 10, 10}, 100);
  CocoParams p = CocoParams::defaults(IouType::kBbox);
  p.max_dets = {3, 1, 2};  // sorted before use, as pycocotools does
  CocoDetections dets;
  dets.add(1, 1, {50, 0, 10, 10}, 0.9);
  dets.add(1, 1, {60, 0, 10, 10}, 0.8);
  dets.add(1, 1, {0, 0, 10, 10}, 0.7);  // the hit is the third by score
  const auto r = evaluate_coco(gt, dets, p);
  CHECK(r.params.max_dets == std::vector<int64_t>{1, 2, 3});
  CHECK(r.recall_at(0, 0, 0, 0) == 0.0);
  CHECK(r.recall_at(0, 0, 0, 1) == 0.0);
  CHECK(r.recall_at(0, 0, 0, 2) == 1.0);
  CHECK(r.precision_at(0, 100, 0, 0, 2) == 1.0 / 3.0);  // 1 / (3 + eps) rounds to 1/3
  // No maxDets of 100 (stats[0]'s hardcoded value) -> -1, as pycocotools' summarize gives.
  CHECK(r.stats[0] == -1);
  CHECK(r.stats[8] == 1.0);  // maxDets[2] = 3

  // maxDets[-1] = 2 drops the hit before any IoU is computed.
  p.max_dets = {1, 2};
  const auto cut = evaluate_coco(gt, dets, p);
  CHECK(cut.recall_at(0, 0, 0, 1) == 0.0);
  CHECK(cut.stats[8] == -1);  // maxDets[2] does not exist (pycocotools: IndexError)
  CHECK(cut.summary_lines()[8].find("maxDets= -1 ] = -1.000") != std::string::npos);
}

TEST_CASE("coco score ties keep image order then file order", "[unit][eval]") {
  CocoGroundTruth gt;
  gt.add_image(1);
  gt.add_image(2);
  gt.add_category(1);
  add_gt_box(gt, 1, 1, 1, {0, 0, 10, 10}, 100);
  add_gt_box(gt, 2, 2, 1, {0, 0, 10, 10}, 100);
  const auto precision_at_hit = [&](const CocoDetections& dets) {
    return evaluate_coco(gt, dets, CocoParams::defaults(IouType::kBbox))
        .precision_at(0, 50, 0, 0, 2);
  };
  CocoDetections fp_image_first;  // image 1 holds the false positive, image 2 the hit
  fp_image_first.add(2, 1, {0, 0, 10, 10}, 0.5);
  fp_image_first.add(1, 1, {50, 50, 10, 10}, 0.5);
  CHECK(precision_at_hit(fp_image_first) == 0.5);  // FP sorts first: 1 / (2 + eps)
  CocoDetections hit_image_first;
  hit_image_first.add(2, 1, {50, 50, 10, 10}, 0.5);
  hit_image_first.add(1, 1, {0, 0, 10, 10}, 0.5);
  CHECK(precision_at_hit(hit_image_first) == kOneTp);
  // Inside one image the file order decides.
  CocoDetections fp_listed_first;
  fp_listed_first.add(1, 1, {50, 50, 10, 10}, 0.5);
  fp_listed_first.add(1, 1, {0, 0, 10, 10}, 0.5);
  CHECK(precision_at_hit(fp_listed_first) == 0.5);
  CocoDetections hit_listed_first;
  hit_listed_first.add(1, 1, {0, 0, 10, 10}, 0.5);
  hit_listed_first.add(1, 1, {50, 50, 10, 10}, 0.5);
  CHECK(precision_at_hit(hit_listed_first) == kOneTp);
}

TEST_CASE("coco empty results give zero where ground truth exists", "[unit][eval]") {
  const CocoGroundTruth gt = two_boxes_gt();
  const auto r = evaluate_coco(gt, CocoDetections{}, CocoParams::defaults(IouType::kBbox));
  CHECK(r.stats == std::vector<double>{0, 0, 0, 0, -1, -1, 0, 0, 0, 0, -1, -1});
  CHECK(r.precision_at(3, 0, 0, 0, 2) == 0.0);
  CHECK(r.precision_at(3, 0, 1, 0, 2) == -1.0);
  CHECK(r.counts.detections == 0);
}

TEST_CASE("coco gt id 0 is never recalled", "[unit][eval]") {
  CocoGroundTruth gt;
  gt.add_image(7);
  gt.add_category(3);
  add_gt_box(gt, 0, 7, 3, {0, 0, 10, 10}, 100);
  CocoDetections dets;
  dets.add(7, 3, {0, 0, 10, 10}, 0.9);
  const auto r = evaluate_coco(gt, dets, CocoParams::defaults(IouType::kBbox));
  CHECK(r.stats[0] == 0.0);
  CHECK(r.stats[8] == 0.0);
  // Renumbered to 1, the same detection is a perfect hit.
  gt.ann_id[0] = 1;
  CHECK(evaluate_coco(gt, dets, CocoParams::defaults(IouType::kBbox)).stats[8] == 1.0);
}

TEST_CASE("coco use_cats off pools categories per image", "[unit][eval]") {
  const CocoGroundTruth gt = two_boxes_gt();
  CocoDetections dets;
  dets.add(1, 2, {0, 0, 10, 10}, 0.9);  // wrong category, right place
  dets.add(1, 1, {20, 0, 10, 10}, 0.8);
  CocoParams p = CocoParams::defaults(IouType::kBbox);
  CHECK(evaluate_coco(gt, dets, p).stats[8] == 0.5);
  p.use_cats = false;
  const auto pooled = evaluate_coco(gt, dets, p);
  CHECK(pooled.category_ids == std::vector<int64_t>{-1});
  CHECK(pooled.stats[8] == 1.0);
  // Keypoints with use_cats off is refused (pycocotools would score it as all zeros).
  CocoParams kp = CocoParams::defaults(IouType::kKeypoints);
  kp.use_cats = false;
  CHECK_THROWS_AS(CocoEvaluator(gt, kp), detrain::ConfigError);
}

TEST_CASE("coco custom parameters and keypoint count", "[unit][eval]") {
  // Two keypoints per instance with custom sigmas; one IoU threshold; three recall points.
  CocoGroundTruth gt;
  gt.add_image(1);
  gt.add_category(1, "hand");
  GtAnnotation a;
  a.id = 1;
  a.image_id = 1;
  a.category_id = 1;
  a.bbox = {0, 0, 20, 20};
  a.area = 400;
  a.num_keypoints = 2;
  a.keypoints = {5, 5, 2, 15, 15, 2};
  gt.add_annotation(a);
  CocoParams p = CocoParams::defaults(IouType::kKeypoints);
  CHECK_THROWS_AS(CocoEvaluator(gt, p), detrain::ConfigError);  // 17 sigmas for 2 keypoints
  p.keypoint_sigmas = {0.05, 0.05};
  p.iou_thresholds = {0.5};
  p.recall_thresholds = {0, 0.5, 1};
  p.area_ranges = {{"all", 0, 1e10}};
  CocoDetections dets;
  dets.keypoints_per_instance = 2;
  const double exact[6] = {5, 5, 1, 15, 15, 1};
  const double far[6] = {100, 100, 1, 120, 120, 1};
  dets.add_keypoints_only(1, 1, 0.9, far);
  dets.add_keypoints_only(1, 1, 0.8, exact);
  const auto r = CocoEvaluator(gt, p).evaluate(dets);
  REQUIRE(r.precision.size() == 3);             // [T=1, R=3, K=1, A=1, M=1]
  CHECK(r.precision_at(0, 0, 0, 0, 0) == 0.5);  // 1 / (2 + eps)
  CHECK(r.precision_at(0, 2, 0, 0, 0) == 0.5);
  CHECK(r.recall_at(0, 0, 0, 0) == 1.0);
  CHECK(r.stats[0] == 0.5);  // AP at maxDets 20 (hardcoded for keypoints), area "all"
  CHECK(r.stats[2] == -1);   // no 0.75 threshold
  CHECK(r.stats[3] == -1);   // no "medium" range
  // Results with another keypoint count are refused.
  CocoDetections three;
  three.keypoints_per_instance = 3;
  const double p3[9] = {0, 0, 1, 1, 1, 1, 2, 2, 1};
  three.add_keypoints_only(1, 1, 0.5, p3);
  CHECK_THROWS_AS(CocoEvaluator(gt, p).evaluate(three), detrain::DataError);
}

TEST_CASE("coco evaluator rejects results outside the ground truth", "[unit][eval]") {
  const CocoGroundTruth gt = two_boxes_gt();
  CocoDetections dets;
  dets.add(1, 1, {0, 0, 10, 10}, 0.9);
  dets.add(42, 1, {0, 0, 10, 10}, 0.9);
  try {
    evaluate_coco(gt, dets, CocoParams::defaults(IouType::kBbox));
    FAIL("expected a DataError");
  } catch (const detrain::DataError& e) {
    CHECK(std::string(e.what()).find("result 1 has image_id 42") != std::string::npos);
  }
  CocoDetections unknown;
  unknown.add(1, 1, {0, 0, 10, 10}, 0.9);
  unknown.add(1, 77, {0, 0, 10, 10}, 0.9);
  unknown.add(1, 78, {0, 0, 10, 10}, 0.9);
  const auto r = evaluate_coco(gt, unknown, CocoParams::defaults(IouType::kBbox));
  CHECK(r.counts.dropped_unknown_category == 2);
  CHECK(r.counts.first_unknown_category == 77);
  CocoDetections nan_score;
  nan_score.add(1, 1, {0, 0, 10, 10}, std::numeric_limits<double>::quiet_NaN());
  CHECK_THROWS_AS(evaluate_coco(gt, nan_score, CocoParams::defaults(IouType::kBbox)),
                  detrain::DataError);
  CocoParams bad = CocoParams::defaults(IouType::kBbox);
  bad.max_dets.clear();
  CHECK_THROWS_AS(CocoEvaluator(gt, bad), detrain::ConfigError);
}

TEST_CASE("coco missing annotation fields name the annotation when evaluated", "[unit][eval]") {
  CocoGroundTruth gt = two_boxes_gt();
  gt.ann_fields[1] &= static_cast<uint8_t>(~kGtIscrowd);
  try {
    CocoEvaluator evaluator(gt, CocoParams::defaults(IouType::kBbox));
    FAIL("expected a DataError");
  } catch (const detrain::DataError& e) {
    CHECK(std::string(e.what()).find("annotation id 2 has no 'iscrowd'") != std::string::npos);
  }
  // Outside the evaluated images the same gap is never read.
  CocoParams p = CocoParams::defaults(IouType::kBbox);
  gt.add_image(2);
  p.image_ids = {2};
  CHECK_NOTHROW(CocoEvaluator(gt, p));
  // Keypoint evaluation needs num_keypoints.
  CocoGroundTruth kp = two_boxes_gt();
  CHECK_THROWS_WITH(
      CocoEvaluator(kp, CocoParams::defaults(IouType::kKeypoints)),
      Catch::Contains("annotation id 1 has no 'keypoints'") || Catch::Contains("17 sigmas"));
}

TEST_CASE("coco evaluator can be reused and subset images", "[unit][eval]") {
  const auto c = detrain::test::synthetic_case();
  const auto full = detrain::test::run_case(c);
  const auto again = detrain::test::run_case(c);
  CHECK(full.stats == again.stats);
  CHECK(full.counts.images == 300);
  CHECK(full.counts.detections == 30000);
  CHECK(full.counts.gt_annotations > 1500);
}
