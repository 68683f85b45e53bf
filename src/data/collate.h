// Collate: the only place that builds batch tensors. Samples (BGR HWC images, labels in input
// pixels) -> images [B, 3, H, W] uint8 RGB (normalised on the device, not here; laid out NCHW,
// or channels-last for a model that runs so: runtime.memory_format), targets as
// batch_idx / cls / normalised xywh boxes / normalised keypoints, and the per-image frames the
// evaluator needs to map predictions back to original pixels.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "data/sample.h"
#include "geometry/image_frame.h"

namespace detrain::data {

struct Batch {
  torch::Tensor images;       // [B, 3, H, W] uint8 RGB, NCHW or channels-last
  torch::Tensor batch_idx;    // [N] int64 image of each target
  torch::Tensor cls;          // [N] int64 contiguous class index
  torch::Tensor boxes_xywhn;  // [N, 4] float cx, cy, w, h normalised by W, H
  torch::Tensor keypoints;    // [N, K, 3] float x / W, y / H, visibility; undefined for detect
  std::vector<geometry::ImageFrame> frames;  // [B] image id, original size, ratio, pad
  std::vector<std::string> files;            // [B]
  int64_t index = 0;                         // batch index within the epoch
  double data_wait_ms = 0;                   // how long next() waited for this batch

  int64_t size() const { return images.defined() ? images.size(0) : 0; }
  // Copies the tensors to `device` (non-blocking from pinned memory on CUDA).
  Batch to(const torch::Device& device) const;
};

// Stacks samples of one size. `pin_memory` allocates the images in page-locked memory (only
// with CUDA); `channels_last` lays them out [B, H, W, 3] in memory (the same [B, 3, H, W]
// tensor, channels-last strides), which spares the model's thread the layout change. Throws
// DataError if the samples differ in size.
Batch collate(const std::vector<Sample>& samples, bool pin_memory = false,
              bool channels_last = false);

}  // namespace detrain::data
