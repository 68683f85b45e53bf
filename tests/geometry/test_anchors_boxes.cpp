// Anchor grids and box conversions (src/geometry): anchor order and centres as the golden
// README section 0 defines them, decoding around anchors, and the inverse conversions.
#include <catch2/catch.hpp>

#include "geometry/anchors.h"
#include "geometry/box_ops.h"

using namespace detrain::geometry;

TEST_CASE("anchors are level by level and row-major and centred in their cells",
          "[unit][geometry]") {
  const auto anchors = make_anchors({{2, 3}, {1, 2}}, {8, 16}, 0.5, torch::kFloat);
  // Level 0 (2 rows x 3 columns, y first then x), then level 1 (1 x 2); grid units.
  const auto expected = torch::tensor({0.5f, 0.5f, 1.5f, 0.5f, 2.5f, 0.5f, 0.5f, 1.5f, 1.5f, 1.5f,
                                       2.5f, 1.5f, 0.5f, 0.5f, 1.5f, 0.5f})
                            .view({8, 2});
  CHECK(torch::equal(anchors.points, expected));
  CHECK(torch::equal(anchors.strides.view(-1),
                     torch::tensor({8.f, 8.f, 8.f, 8.f, 8.f, 8.f, 16.f, 16.f})));
  // From feature maps: dtype and device follow the first map; 128 px -> 336 anchors.
  const std::vector<torch::Tensor> feats{torch::zeros({1, 4, 16, 16}, torch::kFloat64),
                                         torch::zeros({1, 4, 8, 8}, torch::kFloat64),
                                         torch::zeros({1, 4, 4, 4}, torch::kFloat64)};
  const auto from_feats = make_anchors(feats, {8, 16, 32});
  CHECK(from_feats.points.size(0) == 336);
  CHECK(from_feats.points.scalar_type() == torch::kFloat64);
  // Anchor 256 is the first of level P4: centre (0.5, 0.5) cells = (8, 8) px at stride 16.
  CHECK(from_feats.points[256][0].item<double>() == 0.5);
  CHECK(from_feats.strides[256][0].item<double>() == 16);
  // Anchor 18: x 2, y 1 of the 16 x 16 grid -> (20, 12) px.
  CHECK((from_feats.points * from_feats.strides)[18].equal(
      torch::tensor({20.0, 12.0}, torch::kFloat64)));
}

TEST_CASE("level sizes follow stride-2 convolutions", "[unit][geometry]") {
  CHECK(level_sizes(640, 640, {8, 16, 32}) ==
        std::vector<std::pair<int64_t, int64_t>>{{80, 80}, {40, 40}, {20, 20}});
  CHECK(level_sizes(100, 64, {8, 16, 32}) ==
        std::vector<std::pair<int64_t, int64_t>>{{13, 8}, {7, 4}, {4, 2}});
}

TEST_CASE("ltrb distances decode around anchors and encode back", "[unit][geometry]") {
  const auto points = torch::tensor({{2.5f, 3.5f}, {0.5f, 0.5f}});                   // [A=2, 2]
  const auto dist = torch::tensor({{1.f, 2.f, 3.f, 4.f}, {0.5f, 0.f, 0.f, 0.25f}});  // [2, 4]
  const auto xyxy = dist2bbox(dist, points, false);
  CHECK(torch::equal(xyxy, torch::tensor({{1.5f, 1.5f, 5.5f, 7.5f}, {0.f, 0.5f, 0.5f, 0.75f}})));
  const auto xywh = dist2bbox(dist, points, true);
  CHECK(torch::equal(xywh, torch::tensor({{3.5f, 4.5f, 4.f, 6.f}, {0.25f, 0.625f, 0.5f, 0.25f}})));
  CHECK(torch::equal(xyxy2xywh(xyxy), xywh));
  CHECK(torch::equal(xywh2xyxy(xywh), xyxy));
  CHECK(torch::equal(bbox2dist(points, xyxy, 1), dist));
  // DFL targets are clamped into [0, reg_max - 1 - 0.01].
  const auto far = torch::tensor({{-20.f, 3.f, 40.f, 3.5f}});
  CHECK(torch::allclose(bbox2dist(points.slice(0, 0, 1), far, 16),
                        torch::tensor({{14.99f, 0.5f, 14.99f, 0.f}})));
  // Channel-first layout as in the head: distances [B, 4, A], points [1, 2, A], dim 1.
  const auto channel_first = dist2bbox(dist.t().unsqueeze(0), points.t().unsqueeze(0), false, 1);
  CHECK(torch::equal(channel_first[0].t(), xyxy));
}
