// Box conversions; see box_ops.h. The operation order follows the reference's tal.py / ops.py
// so that decoded boxes round the same way in fp32.
#include "geometry/box_ops.h"

#include <torch/torch.h>

namespace detrain::geometry {

torch::Tensor xyxy2xywh(const torch::Tensor& boxes) {
  TORCH_CHECK(boxes.size(-1) == 4, "xyxy2xywh: last dimension must be 4, got ", boxes.sizes());
  const auto xy1 = boxes.narrow(-1, 0, 2), xy2 = boxes.narrow(-1, 2, 2);
  return torch::cat({(xy1 + xy2) / 2, xy2 - xy1}, -1);
}

torch::Tensor xywh2xyxy(const torch::Tensor& boxes) {
  TORCH_CHECK(boxes.size(-1) == 4, "xywh2xyxy: last dimension must be 4, got ", boxes.sizes());
  const auto centre = boxes.narrow(-1, 0, 2), half = boxes.narrow(-1, 2, 2) / 2;
  return torch::cat({centre - half, centre + half}, -1);
}

torch::Tensor dist2bbox(const torch::Tensor& distances, const torch::Tensor& anchor_points,
                        bool xywh, int64_t dim) {
  TORCH_CHECK(distances.size(dim) == 4, "dist2bbox: distances need 4 values along dim ", dim);
  const auto parts = distances.chunk(2, dim);
  const auto xy1 = anchor_points - parts[0];  // left/top edge
  const auto xy2 = anchor_points + parts[1];  // right/bottom edge
  if (xywh) return torch::cat({(xy1 + xy2) / 2, xy2 - xy1}, dim);
  return torch::cat({xy1, xy2}, dim);
}

torch::Tensor bbox2dist(const torch::Tensor& anchor_points, const torch::Tensor& boxes_xyxy,
                        int64_t reg_max) {
  const auto parts = boxes_xyxy.chunk(2, -1);
  auto distances = torch::cat({anchor_points - parts[0], parts[1] - anchor_points}, -1);
  if (reg_max > 1) distances = distances.clamp(0, static_cast<double>(reg_max) - 1 - 0.01);
  return distances;
}

}  // namespace detrain::geometry
