// Anchor points and strides for a list of feature maps: one anchor per grid cell, centred at
// (x + offset, y + offset) in grid units, levels concatenated in order and row-major inside a
// level (y first, then x). The model, the loss and the evaluator share this single definition.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace detrain::geometry {

struct Anchors {
  torch::Tensor points;   // [A, 2] (x, y) in grid units of the anchor's level
  torch::Tensor strides;  // [A, 1] stride (px per grid cell) of the anchor's level
};

// Anchors for feature maps `feats` ([B, C, H_i, W_i] each) with `strides` (one per level), in
// the dtype and on the device of the first feature map.
Anchors make_anchors(const std::vector<torch::Tensor>& feats, const std::vector<int64_t>& strides,
                     double offset = 0.5);

// The same from level sizes (H_i, W_i) alone.
Anchors make_anchors(const std::vector<std::pair<int64_t, int64_t>>& sizes_hw,
                     const std::vector<int64_t>& strides, double offset,
                     const torch::TensorOptions& options);

// Level sizes (H_i, W_i) of an input of height x width at the given strides (ceil division,
// which is what stride-2 3x3 convolutions with padding 1 produce).
std::vector<std::pair<int64_t, int64_t>> level_sizes(int64_t height, int64_t width,
                                                     const std::vector<int64_t>& strides);

}  // namespace detrain::geometry
