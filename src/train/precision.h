// Numeric precision of a training step: the BF16 autocast scope around the forward pass (CPU
// and CUDA alike; master weights, loss and optimizer stay fp32) and the gradient-norm clip that
// also reports whether every gradient is finite (what a non-finite step does: divergence.h).
// Differs from the reference: BF16 instead of FP16 + GradScaler (no loss scaling needed), and
// BF16 falls back to fp32 on CPUs where it was not measured fast (x86 without AVX2).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compat/torch_compat.h"

namespace detrain::train {

// kBf16Always: BF16 even on a CPU where it is slow (to measure that); never an effective one.
enum class Precision { kFp32, kBf16, kBf16Always };

// "bf16" | "bf16-always" | "fp32" (train.precision); throws ConfigError otherwise.
Precision parse_precision(const std::string& text);
const char* precision_name(Precision precision);

// The precision a run uses on `device`: `requested`, except that kBf16 becomes kFp32 on a CPU
// where BF16 was not measured fast (compat::cpu_has_fast_bf16_conv: x86 without AVX2), and
// kBf16Always becomes kBf16. Logs one warning line when
// it falls back.
Precision effective_precision(Precision requested, const torch::Device& device);

// Autocast for the model's forward pass on `device`'s type while alive: BF16 when `precision`
// is kBf16, nothing for kFp32. Cast predictions to fp32 before the loss, outside the scope.
class AutocastScope {
 public:
  AutocastScope(Precision precision, const torch::Device& device);
  bool active() const { return guard_.has_value(); }

 private:
  std::optional<compat::AutocastGuard> guard_;
};

struct GradNorm {
  double total_norm = 0;  // L2 norm over every defined gradient (NaN/Inf when any is)
  bool finite = true;     // total_norm is finite, hence every gradient is
  bool clipped = false;   // gradients were scaled down
};

// torch.nn.utils.clip_grad_norm_ semantics: total = ||(||g_i||_2)_i||_2; when total is finite
// and max_norm > 0, scales every gradient by min(max_norm / (total + 1e-6), 1). Non-finite
// gradients are left untouched (the caller skips the step). Undefined gradients are ignored.
GradNorm clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);

}  // namespace detrain::train
