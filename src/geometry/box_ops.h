// Tensor box maths shared by the model, the losses and the evaluator: conversions between
// xyxy, xywh (centre, size) and ltrb distances around anchor points. Boxes sit in the last
// dimension unless a function takes `dim`.
#pragma once

#include <torch/types.h>

namespace detrain::geometry {

// [..., 4] x1,y1,x2,y2 -> cx,cy,w,h
torch::Tensor xyxy2xywh(const torch::Tensor& boxes);
// [..., 4] cx,cy,w,h -> x1,y1,x2,y2
torch::Tensor xywh2xyxy(const torch::Tensor& boxes);

// ltrb distances around anchor points -> boxes (xyxy, or cx,cy,w,h when xywh), both along
// `dim` (size 4 for distances, 2 for points); shapes broadcast, e.g. distances [B, 4, A] with
// points [1, 2, A] and dim 1, or distances [B, A, 4] with points [A, 2] and dim -1. Units are
// those of the inputs (grid units in the head and losses).
torch::Tensor dist2bbox(const torch::Tensor& distances, const torch::Tensor& anchor_points,
                        bool xywh, int64_t dim = -1);

// xyxy boxes [..., 4] -> ltrb distances from anchor points [..., 2], clamped to
// [0, reg_max - 1 - 0.01] when reg_max > 1 (the DFL target range); unclamped otherwise.
torch::Tensor bbox2dist(const torch::Tensor& anchor_points, const torch::Tensor& boxes_xyxy,
                        int64_t reg_max);

}  // namespace detrain::geometry
