// IoU / GIoU / DIoU / CIoU (src/geometry/box_iou): hand-computed values for overlapping,
// non-overlapping, touching, nested and degenerate pairs, the xywh input form, and the
// reference's CIoU gradient (alpha held constant).
#include <catch2/catch.hpp>
#include <cmath>

#include "geometry/box_iou.h"

using namespace detrain::geometry;
using Catch::Detail::Approx;

namespace {

double iou_of(const std::vector<float>& a, const std::vector<float>& b, IouKind kind) {
  return bbox_iou(torch::tensor(a).view({1, 4}), torch::tensor(b).view({1, 4}), kind)
      .item<double>();
}

// fp32 arithmetic with eps 1e-7 against exact fractions: a few ulps of 1.
constexpr double kTol = 1e-6;

}  // namespace

TEST_CASE("IoU family on overlapping boxes", "[unit][geometry][loss]") {
  // [0,0,2,2] and [1,1,3,3]: inter 1, union 4 + 4 - 1 = 7; enclosing box [0,0,3,3].
  const std::vector<float> a{0, 0, 2, 2}, b{1, 1, 3, 3};
  CHECK(iou_of(a, b, IouKind::kIoU) == Approx(1.0 / 7).margin(kTol));
  // GIoU = IoU - (9 - 7) / 9.
  CHECK(iou_of(a, b, IouKind::kGIoU) == Approx(1.0 / 7 - 2.0 / 9).margin(kTol));
  // DIoU = IoU - rho^2 / c^2: centres (1,1), (2,2) -> rho^2 2; diagonal^2 9 + 9 = 18.
  CHECK(iou_of(a, b, IouKind::kDIoU) == Approx(1.0 / 7 - 2.0 / 18).margin(kTol));
  // Same aspect ratio: v = 0, so CIoU = DIoU.
  CHECK(iou_of(a, b, IouKind::kCIoU) == Approx(1.0 / 7 - 2.0 / 18).margin(kTol));
}

TEST_CASE("CIoU aspect term by hand", "[unit][geometry][loss]") {
  // Nested: [0,0,4,2] contains [1,0,3,2]... use [0,0,4,2] vs [1,0,3,2] (2x2 inside 4x2).
  // IoU = 4 / 8; same centre (2,1) -> rho 0; v = 4/pi^2 (atan(1) - atan(2))^2;
  // alpha = v / (v - iou + 1); CIoU = iou - v * alpha.
  const double iou = 0.5;
  const double v = 4 / (M_PI * M_PI) * std::pow(std::atan(1.0) - std::atan(2.0), 2);
  const double alpha = v / (v - iou + 1);
  CHECK(iou_of({0, 0, 4, 2}, {1, 0, 3, 2}, IouKind::kCIoU) == Approx(iou - v * alpha).margin(kTol));
  CHECK(iou_of({0, 0, 4, 2}, {1, 0, 3, 2}, IouKind::kIoU) == Approx(0.5).margin(kTol));
  // Nested boxes: GIoU = IoU (the enclosing box is the outer one, its area = union).
  CHECK(iou_of({0, 0, 4, 2}, {1, 0, 3, 2}, IouKind::kGIoU) == Approx(0.5).margin(kTol));
}

TEST_CASE("IoU family on disjoint and touching boxes", "[unit][geometry][loss]") {
  // Disjoint [0,0,1,1] and [2,0,3,1]: IoU 0; enclosing [0,0,3,1] area 3, union 2.
  const std::vector<float> a{0, 0, 1, 1}, far{2, 0, 3, 1}, touch{1, 0, 2, 1};
  CHECK(iou_of(a, far, IouKind::kIoU) == Approx(0).margin(kTol));
  CHECK(iou_of(a, far, IouKind::kGIoU) == Approx(-1.0 / 3).margin(kTol));
  // Centres 2 apart -> rho^2 4; diagonal^2 9 + 1 = 10.
  CHECK(iou_of(a, far, IouKind::kDIoU) == Approx(-0.4).margin(kTol));
  CHECK(iou_of(a, far, IouKind::kCIoU) == Approx(-0.4).margin(kTol));
  // Touching along an edge: zero intersection, enclosing box = union -> GIoU 0.
  CHECK(iou_of(a, touch, IouKind::kIoU) == Approx(0).margin(kTol));
  CHECK(iou_of(a, touch, IouKind::kGIoU) == Approx(0).margin(kTol));
  // Centres 1 apart, diagonal^2 4 + 1 = 5.
  CHECK(iou_of(a, touch, IouKind::kDIoU) == Approx(-0.2).margin(kTol));
}

TEST_CASE("IoU family stays finite on degenerate boxes", "[unit][geometry][loss]") {
  // Zero-area boxes (a point, a line, identical points): eps keeps every value finite.
  const auto point = torch::tensor({1.f, 1.f, 1.f, 1.f}).view({1, 4});
  const auto line = torch::tensor({0.f, 1.f, 2.f, 1.f}).view({1, 4});
  const auto box = torch::tensor({0.f, 0.f, 2.f, 2.f}).view({1, 4});
  for (auto kind : {IouKind::kIoU, IouKind::kGIoU, IouKind::kDIoU, IouKind::kCIoU}) {
    for (const auto& [x, y] : {std::pair{point, point}, {point, box}, {line, box}, {line, line}}) {
      const auto value = bbox_iou(x, y, kind);
      INFO("kind " << static_cast<int>(kind) << " value " << value);
      CHECK(torch::isfinite(value).all().item<bool>());
    }
  }
  // Identical points: inter 0, union eps -> IoU 0, and DIoU 0 (same centre).
  CHECK(bbox_iou(point, point, IouKind::kDIoU).item<double>() == Approx(0).margin(kTol));
}

TEST_CASE("IoU accepts xywh and broadcasts", "[unit][geometry][loss]") {
  // cx,cy,w,h (1,1,2,2) = xyxy [0,0,2,2]; (2,2,2,2) = [1,1,3,3]: IoU 1/7 as above.
  const auto a = torch::tensor({1.f, 1.f, 2.f, 2.f}).view({1, 4});
  const auto b = torch::tensor({2.f, 2.f, 2.f, 2.f, 1.f, 1.f, 2.f, 2.f}).view({2, 4});
  const auto iou = bbox_iou(a, b, IouKind::kIoU, /*xywh=*/true);  // [2, 1]
  REQUIRE(iou.sizes() == torch::IntArrayRef({2, 1}));
  CHECK(iou[0].item<double>() == Approx(1.0 / 7).margin(kTol));
  CHECK(iou[1].item<double>() == Approx(1.0).margin(kTol));
}

TEST_CASE("CIoU gradient treats alpha as a constant", "[unit][geometry][loss]") {
  // d CIoU / d x for a box shifted right: with alpha detached the gradient equals
  // d(iou - rho2/c2)/dx - alpha * dv/dx; v does not depend on x, so it is the DIoU gradient.
  auto pred = torch::tensor({0.5f, 0.f, 2.5f, 3.f}).view({1, 4}).requires_grad_(true);
  auto pred2 = pred.detach().clone().requires_grad_(true);
  const auto target = torch::tensor({0.f, 0.f, 2.f, 2.f}).view({1, 4});
  // Move only x1 and x2 together by differentiating with respect to a shared shift.
  const auto shift = torch::tensor({1.f, 0.f, 1.f, 0.f});
  bbox_iou(pred, target, IouKind::kCIoU).sum().backward();
  bbox_iou(pred2, target, IouKind::kDIoU).sum().backward();
  const double ciou_dx = (pred.grad() * shift).sum().item<double>();
  const double diou_dx = (pred2.grad() * shift).sum().item<double>();
  CHECK(ciou_dx == Approx(diou_dx).margin(1e-6));
  CHECK(ciou_dx != 0.0);
}
