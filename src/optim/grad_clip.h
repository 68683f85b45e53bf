// Gradient-norm clipping that also reports whether every gradient is finite (what a training
// step does with a non-finite one: train/divergence.h).
#pragma once

#include <torch/torch.h>

#include <vector>

namespace detrain::optim {

struct GradNorm {
  double total_norm = 0;  // L2 norm over every defined gradient (NaN/Inf when any is)
  bool finite = true;     // total_norm is finite, hence every gradient is
  bool clipped = false;   // gradients were scaled down
};

// torch.nn.utils.clip_grad_norm_ semantics: total = ||(||g_i||_2)_i||_2; when total is finite
// and max_norm > 0, scales every gradient by min(max_norm / (total + 1e-6), 1). Non-finite
// gradients are left untouched (the caller skips the step). Undefined gradients are ignored.
GradNorm clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);

}  // namespace detrain::optim
