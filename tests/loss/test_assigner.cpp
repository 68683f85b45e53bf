// Task-aligned assigner (src/loss/assigner) against the reference's TaskAlignedAssigner on the
// golden case (golden README section 4: o2m topk 10 and o2o topk 7 / topk2 1), plus hand-made
// cases for the small-target rule, conflicts, padding rows and a dense image.
#include <catch2/catch.hpp>
#include <iostream>

#include "loss/assigner.h"
#include "model/safetensors.h"
#include "model/tensor_checks.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::loss;

namespace {

// Indices and masks must match exactly; prints the first mismatching anchors otherwise.
void check_equal(const std::string& name, const torch::Tensor& ours, const torch::Tensor& ref) {
  REQUIRE(ours.sizes() == ref.sizes());
  const auto differ = ours.to(ref.scalar_type()).ne(ref);
  const auto where = differ.nonzero();
  std::ostringstream details;
  for (int64_t i = 0; i < std::min<int64_t>(where.size(0), 5); ++i) {
    const auto at = where[i];
    details << "\n  " << at.sizes() << " " << at << ": ours "
            << ours.index({at.select(0, 0), at.select(0, 1)}) << " reference "
            << ref.index({at.select(0, 0), at.select(0, 1)});
  }
  INFO(name << ": " << where.size(0) << " elements differ" << details.str());
  CHECK(where.size(0) == 0);
}

// The golden's outputs `prefix`.* against ours: masks, indices, labels and boxes exactly (boxes are
// copies of gt rows), scores within rel 1e-5 + 1e-7 (the metric's 6th power over its maximum
// amplifies fp32 rounding of the overlap).
void check_outputs(const model::SafetensorsFile& golden, const std::string& prefix,
                   const Assignment& out) {
  check_equal(prefix + ".fg_mask", out.fg_mask, golden.at(prefix + ".fg_mask"));
  check_equal(prefix + ".target_gt_idx", out.target_gt_idx, golden.at(prefix + ".target_gt_idx"));
  check_equal(prefix + ".target_labels", out.target_labels, golden.at(prefix + ".target_labels"));
  const auto boxes = test::check_close(prefix + ".target_bboxes", out.target_bboxes,
                                       golden.at(prefix + ".target_bboxes"), 0.0);
  INFO(boxes.details);
  CHECK(boxes.ok);
  const auto scores = test::check_close(prefix + ".target_scores", out.target_scores,
                                        golden.at(prefix + ".target_scores"), 1e-5, 1e-7);
  INFO(scores.details);
  CHECK(scores.ok);
}

void check_variant(const model::SafetensorsFile& golden, const std::string& variant, int64_t topk,
                   int64_t topk2, AssignerOptions options = {}) {
  options.topk = topk;
  options.topk2 = topk2;
  options.num_classes = 3;
  const auto out = assign(options, golden.at("in.pd_scores"), golden.at("in.pd_bboxes"),
                          golden.at("in.anc_points"), golden.at("in.gt_labels"),
                          golden.at("in.gt_bboxes"), golden.at("in.mask_gt"));
  check_outputs(golden, variant, out);
}

// One image, 64 px, strides 8/16/32 (the golden layout): anchors in pixels [84, 2].
torch::Tensor anchors_64px() {
  std::vector<torch::Tensor> points;
  for (int64_t s : {8, 16, 32}) {
    const int64_t n = 64 / s;
    const auto c = (torch::arange(n, torch::kFloat) + 0.5) * s;
    auto grid = torch::meshgrid({c, c}, "ij");
    points.push_back(torch::stack({grid[1], grid[0]}, -1).view({-1, 2}));
  }
  return torch::cat(points);
}

}  // namespace

// PoseTaskAlignedAssigner (YOLO26 pose, 8.4.190) on a 640 px case built so that its rules
// matter: gts that fit one level, two or three, a gt without visible keypoints (box IoU), and a
// thin 620 x 16 box whose level gate leaves no candidate (the ungated fallback).
TEST_CASE("pose assigner matches the reference PoseTaskAlignedAssigner",
          "[parity][loss][assigner]") {
  const auto golden = model::read_safetensors(test::golden("assigner.safetensors"));
  AssignerOptions options;
  options.topk = 10;
  options.num_classes = 1;
  const KeypointOverlap keypoints{golden.at("pose.in.pd_kpts"), golden.at("pose.in.gt_kpts"),
                                  golden.at("pose.in.sigmas"), golden.at("pose.in.anc_strides")};
  const auto out = assign(options, golden.at("pose.in.pd_scores"), golden.at("pose.in.pd_bboxes"),
                          golden.at("pose.in.anc_points"), golden.at("pose.in.gt_labels"),
                          golden.at("pose.in.gt_bboxes"), golden.at("pose.in.mask_gt"), &keypoints);
  check_outputs(golden, "pose.out", out);
  // Every gt, the fallback one included, has foreground.
  const auto fg = out.fg_mask[0], idx = out.target_gt_idx[0];
  for (int64_t g = 0; g < golden.at("pose.in.gt_bboxes").size(1); ++g) {
    INFO("gt " << g);
    CHECK(idx.index({fg}).eq(g).any().item<bool>());
  }
}

TEST_CASE("assigner matches the reference TaskAlignedAssigner", "[parity][loss][assigner]") {
  const std::string path = test::golden("assigner.safetensors");
  const auto golden = model::read_safetensors(path);
  SECTION("one-to-many, topk 10") { check_variant(golden, "o2m", 10, 0); }
  SECTION("one-to-one, topk 7 then top-1") { check_variant(golden, "o2o", 7, 1); }
  SECTION("one image and one gt at a time") {
    // Grouping and chunking are memory controls only: the smallest groups give the same result.
    AssignerOptions small;
    small.dense_elements = 1;
    small.chunk_pairs = 1;
    check_variant(golden, "o2m", 10, 0, small);
    check_variant(golden, "o2o", 7, 1, small);
  }
}

TEST_CASE("assigner small-target rule widens sides under the first stride",
          "[unit][loss][assigner]") {
  // A 4 x 4 px gt [10, 14]^2: no anchor centre is strictly inside it, but the test box widened
  // to 16 x 16 around (12, 12), [4, 20]^2, holds (12, 12) at stride 8 (anchor 9), (8, 8) at
  // stride 16 (anchor 64) and (16, 16) at stride 32 (anchor 80). Predictions equal the gt, so
  // all three have CIoU 1 and become foreground.
  const auto anchors = anchors_64px();  // [84, 2]
  const auto gt = torch::tensor({10.f, 10.f, 14.f, 14.f}).view({1, 1, 4});
  const auto boxes = gt.expand({1, 84, 4}).contiguous();
  AssignerOptions options;
  options.num_classes = 1;
  const auto out = assign(options, torch::full({1, 84, 1}, 0.5f), boxes, anchors,
                          torch::zeros({1, 1, 1}), gt, torch::ones({1, 1, 1}));
  CHECK(out.fg_mask.sum().item<int64_t>() == 3);
  for (int64_t a : {9, 64, 80}) CHECK(out.fg_mask[0][a].item<bool>());
  // Targets are the real (unwidened) box.
  CHECK(torch::equal(out.target_bboxes[0][80], gt[0][0]));
}

TEST_CASE("assigner gives a shared anchor to the gt with the higher CIoU",
          "[unit][loss][assigner]") {
  // Nested gts, outer first; every prediction equals the inner gt, and the anchors inside it
  // score highest, so both gts pick the same 10 anchors. All go to gt 1 (CIoU 1 vs 0.25),
  // although gt 0 comes first.
  const auto anchors = anchors_64px();
  const auto inner = torch::tensor({16.f, 16.f, 48.f, 48.f});
  const auto boxes = inner.view({1, 1, 4}).expand({1, 84, 4}).contiguous();
  const auto gts = torch::stack({torch::tensor({0.f, 0.f, 64.f, 64.f}), inner}).unsqueeze(0);
  const auto x = anchors.select(1, 0), y = anchors.select(1, 1);
  const auto inside = (x > 16) & (x < 48) & (y > 16) & (y < 48);  // [84]
  const auto score =
      0.1 + 0.001 * torch::arange(84, torch::kFloat) + 0.5 * inside.to(torch::kFloat);
  AssignerOptions options;
  options.num_classes = 2;
  const auto out = assign(options, score.view({1, 84, 1}).repeat({1, 1, 2}), boxes, anchors,
                          torch::tensor({0.f, 1.f}).view({1, 2, 1}), gts, torch::ones({1, 2, 1}));
  const auto fg = out.fg_mask[0];
  CHECK(fg.sum().item<int64_t>() == 10);
  CHECK((fg & out.target_gt_idx[0].eq(1)).sum().item<int64_t>() == 10);
  CHECK((fg & inside).sum().item<int64_t>() == 10);
  // The best anchor of gt 1 has CIoU 1 and the largest metric: soft target 1 x 1.
  CHECK(out.target_scores[0].select(1, 1).max().item<double>() == Approx(1.0).margin(1e-5));
  CHECK(out.target_scores[0].select(1, 0).max().item<double>() == 0);
}

TEST_CASE("assigner ignores padding rows and handles empty batches", "[unit][loss][assigner]") {
  const auto anchors = anchors_64px();
  const auto boxes = torch::cat({anchors - 6, anchors + 6}, -1).unsqueeze(0).repeat({2, 1, 1});
  AssignerOptions options;
  options.num_classes = 2;
  const auto scores = torch::full({2, 84, 2}, 0.5f);
  SECTION("an image with only padding rows is all background") {
    const auto gts = torch::zeros({2, 1, 4});
    gts[0][0] = torch::tensor({8.f, 8.f, 40.f, 40.f});
    const auto mask = torch::tensor({1.f, 0.f}).view({2, 1, 1});
    const auto out = assign(options, scores, boxes, anchors, torch::ones({2, 1, 1}), gts, mask);
    CHECK(out.fg_mask[0].sum().item<int64_t>() == 10);
    CHECK(out.fg_mask[1].sum().item<int64_t>() == 0);
    CHECK(out.target_scores[1].abs().sum().item<double>() == 0);
  }
  SECTION("no gt in the batch") {
    const auto out = assign(options, scores, boxes, anchors, torch::zeros({2, 0, 1}),
                            torch::zeros({2, 0, 4}), torch::zeros({2, 0, 1}));
    CHECK(out.fg_mask.sum().item<int64_t>() == 0);
    CHECK(out.target_labels.eq(2).all().item<bool>());  // background label = num_classes
    CHECK(out.target_scores.sum().item<double>() == 0);
  }
}

TEST_CASE("assigner handles 1000 gts x 8400 anchors in chunks", "[unit][loss][assigner]") {
  // 640 px input: 80^2 + 40^2 + 20^2 = 8400 anchors; 1000 random gts between 4 and 200 px.
  std::vector<torch::Tensor> points;
  for (int64_t s : {8, 16, 32}) {
    const auto c = (torch::arange(640 / s, torch::kFloat) + 0.5) * s;
    auto grid = torch::meshgrid({c, c}, "ij");
    points.push_back(torch::stack({grid[1], grid[0]}, -1).view({-1, 2}));
  }
  const auto anchors = torch::cat(points);  // [8400, 2]
  REQUIRE(anchors.size(0) == 8400);
  auto gen = at::detail::createCPUGenerator(7);
  const auto centre = torch::rand({1, 1000, 2}, gen) * 600 + 20;
  const auto size = torch::rand({1, 1000, 2}, gen) * 196 + 4;
  const auto gts = torch::cat({centre - size / 2, centre + size / 2}, -1);  // [1, 1000, 4]
  const auto boxes = torch::cat({anchors - 12, anchors + 12}, -1).unsqueeze(0);
  AssignerOptions options;
  options.num_classes = 4;
  const auto labels = torch::randint(0, 4, {1, 1000, 1}, gen).to(torch::kFloat);
  const auto scores = torch::rand({1, 8400, 4}, gen);
  const auto chunked =
      assign(options, scores, boxes, anchors, labels, gts, torch::ones({1, 1000, 1}));
  CHECK(chunked.fg_mask.sum().item<int64_t>() > 1000);
  CHECK(torch::isfinite(chunked.target_scores).all().item<bool>());
  // Chunking is a memory control: one chunk per gt assigns the same anchors. Scores agree to
  // rounding only: elementwise kernels take a SIMD body and a scalar tail (atan, pow), so an
  // element's last bit can depend on its position in the chunk.
  options.chunk_pairs = 8400;
  const auto per_gt =
      assign(options, scores, boxes, anchors, labels, gts, torch::ones({1, 1000, 1}));
  CHECK(torch::equal(chunked.fg_mask, per_gt.fg_mask));
  CHECK(torch::equal(chunked.target_gt_idx, per_gt.target_gt_idx));
  const auto close =
      test::check_close("target_scores", chunked.target_scores, per_gt.target_scores, 1e-5, 1e-7);
  INFO(close.details);
  CHECK(close.ok);
}
