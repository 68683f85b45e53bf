// IoU family; see box_iou.h. Each line mirrors one step of the reference so fp32 results match
// bit for bit; the CIoU trade-off weight alpha is computed under no_grad as there.
#include "geometry/box_iou.h"

#include <torch/torch.h>

#include <cmath>

namespace detrain::geometry {

namespace {

struct Corners {
  torch::Tensor x1, y1, x2, y2;  // [..., 1] each
};

Corners corners(const torch::Tensor& box, bool xywh) {
  auto parts = box.chunk(4, -1);
  if (!xywh) return {parts[0], parts[1], parts[2], parts[3]};
  const auto half_w = parts[2] / 2, half_h = parts[3] / 2;
  return {parts[0] - half_w, parts[1] - half_h, parts[0] + half_w, parts[1] + half_h};
}

}  // namespace

torch::Tensor bbox_iou(const torch::Tensor& box1, const torch::Tensor& box2, IouKind kind,
                       bool xywh, double eps) {
  TORCH_CHECK(box1.size(-1) == 4 && box2.size(-1) == 4, "bbox_iou: boxes need 4 values, got ",
              box1.sizes(), " and ", box2.sizes());
  const auto a = corners(box1, xywh), b = corners(box2, xywh);
  const auto w1 = a.x2 - a.x1, h1 = a.y2 - a.y1 + eps;
  const auto w2 = b.x2 - b.x1, h2 = b.y2 - b.y1 + eps;
  const auto inter = (a.x2.minimum(b.x2) - a.x1.maximum(b.x1)).clamp_min(0) *
                     (a.y2.minimum(b.y2) - a.y1.maximum(b.y1)).clamp_min(0);
  const auto union_area = w1 * h1 + w2 * h2 - inter + eps;
  const auto iou = inter / union_area;
  if (kind == IouKind::kIoU) return iou;

  // Smallest enclosing box.
  const auto cw = a.x2.maximum(b.x2) - a.x1.minimum(b.x1);
  const auto ch = a.y2.maximum(b.y2) - a.y1.minimum(b.y1);
  if (kind == IouKind::kGIoU) {
    const auto c_area = cw * ch + eps;
    return iou - (c_area - union_area) / c_area;
  }
  const auto c2 = cw.pow(2) + ch.pow(2) + eps;  // enclosing diagonal squared
  const auto rho2 =
      ((b.x1 + b.x2 - a.x1 - a.x2).pow(2) + (b.y1 + b.y2 - a.y1 - a.y2).pow(2)) / 4;  // centres
  if (kind == IouKind::kDIoU) return iou - rho2 / c2;

  const auto v = (4 / (M_PI * M_PI)) * ((w2 / h2).atan() - (w1 / h1).atan()).pow(2);
  torch::Tensor alpha;
  {
    torch::NoGradGuard no_grad;
    alpha = v / (v - iou + (1 + eps));
  }
  return iou - (rho2 / c2 + v * alpha);
}

}  // namespace detrain::geometry
