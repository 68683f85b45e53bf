// The numeric precision a model's forward pass runs in (training, validation, predict): the BF16
// autocast scope around it (CPU and CUDA alike; master weights, loss and optimizer stay fp32).
// Differs from the reference: BF16 instead of FP16 + GradScaler (no loss scaling needed), and
// BF16 falls back to fp32 on CPUs where it was not measured fast (x86 without AVX2).
#pragma once

#include <torch/torch.h>

#include <optional>
#include <string>

#include "compat/torch_compat.h"

namespace detrain::model {

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

}  // namespace detrain::model
