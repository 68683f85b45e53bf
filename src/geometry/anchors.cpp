// Anchor grids; see anchors.h.
#include "geometry/anchors.h"

#include <torch/torch.h>

namespace detrain::geometry {

Anchors make_anchors(const std::vector<std::pair<int64_t, int64_t>>& sizes_hw,
                     const std::vector<int64_t>& strides, double offset,
                     const torch::TensorOptions& options) {
  TORCH_CHECK(sizes_hw.size() == strides.size(), "make_anchors: ", sizes_hw.size(), " levels but ",
              strides.size(), " strides");
  std::vector<torch::Tensor> points, stride_columns;
  for (size_t i = 0; i < sizes_hw.size(); ++i) {
    const auto [height, width] = sizes_hw[i];
    const auto xs = torch::arange(width, options) + offset;                // [W]
    const auto ys = torch::arange(height, options) + offset;               // [H]
    auto grid = torch::meshgrid({ys, xs}, "ij");                           // 2 x [H, W]
    points.push_back(torch::stack({grid[1], grid[0]}, -1).view({-1, 2}));  // [H*W, 2]
    stride_columns.push_back(
        torch::full({height * width, 1}, static_cast<double>(strides[i]), options));
  }
  return {torch::cat(points), torch::cat(stride_columns)};
}

Anchors make_anchors(const std::vector<torch::Tensor>& feats, const std::vector<int64_t>& strides,
                     double offset) {
  TORCH_CHECK(!feats.empty(), "make_anchors: no feature maps");
  std::vector<std::pair<int64_t, int64_t>> sizes;
  for (const auto& f : feats) sizes.emplace_back(f.size(2), f.size(3));
  return make_anchors(sizes, strides, offset,
                      torch::TensorOptions().dtype(feats[0].dtype()).device(feats[0].device()));
}

std::vector<std::pair<int64_t, int64_t>> level_sizes(int64_t height, int64_t width,
                                                     const std::vector<int64_t>& strides) {
  std::vector<std::pair<int64_t, int64_t>> sizes;
  for (int64_t s : strides) sizes.emplace_back((height + s - 1) / s, (width + s - 1) / s);
  return sizes;
}

}  // namespace detrain::geometry
