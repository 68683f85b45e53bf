// Data-parallel replicas as the model and the losses see them: how many processes train the
// same weights and a sum over all of them. Layers and losses that normalise over the batch
// (synchronised BatchNorm, the detection loss's target-score sum) use it to normalise over the
// global batch, so N ranks of batch b compute what one process of batch N*b would.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>

namespace detrain {

struct Replicas {
  int64_t world_size = 1;
  int64_t rank = 0;  // this process's index, 0 .. world_size - 1
  // Element-wise sum of `t` over every rank (each rank passes its own value, all get the
  // total); a collective, so every rank must call it in the same order. Empty for one process.
  std::function<torch::Tensor(const torch::Tensor&)> sum;

  bool active() const { return world_size > 1 && static_cast<bool>(sum); }
};

}  // namespace detrain
