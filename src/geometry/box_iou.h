// Elementwise IoU, GIoU, DIoU and CIoU of box pairs (the reference's bbox_iou in metrics.py).
// Same operation order and eps placement (eps added to heights and to the union, CIoU's alpha
// taken without gradient), so losses and assignments round as the reference does in fp32.
#pragma once

#include <torch/types.h>

namespace detrain::geometry {

enum class IouKind { kIoU, kGIoU, kDIoU, kCIoU };

// The reference's eps (1e-7): keeps degenerate (zero-area) pairs finite.
inline constexpr double kIouEps = 1e-7;

// box1, box2: [..., 4] broadcastable, xyxy (or cx,cy,w,h when xywh) -> [..., 1].
// Not symmetric in rounding: the reference passes (pred, target) in the box loss and
// (gt, pred) in the assigner, and callers keep that order.
torch::Tensor bbox_iou(const torch::Tensor& box1, const torch::Tensor& box2, IouKind kind,
                       bool xywh = false, double eps = kIouEps);

}  // namespace detrain::geometry
