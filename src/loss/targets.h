// Ground truth as the data loader's collate produces it (`Targets`, one row per object, sorted
// by image) and its per-image padded form in input pixels, which the assigner and the losses
// consume. Padding rows are all zero and are told apart by a box sum <= 0, as in the reference.
#pragma once

#include <torch/types.h>

#include <array>
#include <cstdint>

namespace detrain::loss {

struct Targets {
  torch::Tensor batch_idx;    // [N] int64 image in the batch, non-decreasing
  torch::Tensor cls;          // [N] int64 class
  torch::Tensor boxes_xywhn;  // [N, 4] float normalised cx, cy, w, h
  torch::Tensor keypoints;    // [N, K, 3] float normalised x, y, visibility 0/1/2 (pose only)
};

// Targets padded per image to the largest object count M of the batch.
struct PaddedTargets {
  torch::Tensor labels;         // [B, M, 1] float class
  torch::Tensor boxes_xyxy_px;  // [B, M, 4] input pixels
  torch::Tensor mask;           // [B, M, 1] float 1 for real rows (box sum > 0)
  torch::Tensor keypoints_px;   // [B, M, K, 3] x, y in input pixels, visibility (pose only)
};

// Pads `targets` for a batch of `batch_size` images of imgsz_hw (height, width) pixels, in the
// dtype and on the device of `like`.
PaddedTargets pad_targets(const Targets& targets, int64_t batch_size,
                          std::array<int64_t, 2> imgsz_hw, const torch::Tensor& like);

}  // namespace detrain::loss
