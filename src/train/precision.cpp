// Precision scope, gradient clipping and the finite guard; see precision.h.
#include "train/precision.h"

#include <spdlog/spdlog.h>

#include <cmath>

#include "common/errors.h"

namespace detrain::train {

Precision parse_precision(const std::string& text) {
  if (text == "bf16") return Precision::kBf16;
  if (text == "bf16-always") return Precision::kBf16Always;
  if (text == "fp32") return Precision::kFp32;
  throw ConfigError("config: train.precision is '" + text +
                    "'; expected bf16, bf16-always or fp32");
}

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::kBf16:
      return "bf16";
    case Precision::kBf16Always:
      return "bf16-always";
    case Precision::kFp32:
      break;
  }
  return "fp32";
}

Precision effective_precision(Precision requested, const torch::Device& device) {
  if (requested == Precision::kBf16Always) return Precision::kBf16;
  if (requested != Precision::kBf16 || !device.is_cpu() || compat::cpu_has_fast_bf16_conv())
    return requested;
  spdlog::warn(
      "train.precision=bf16: this CPU has no AVX2, where BF16 convolutions are not known to be "
      "fast; training and validating in fp32 instead (train.precision=bf16-always forces BF16)");
  return Precision::kFp32;
}

AutocastScope::AutocastScope(Precision precision, const torch::Device& device) {
  if (precision == Precision::kBf16) guard_.emplace(device.type(), torch::kBFloat16);
}

GradNorm clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  GradNorm out;
  if (grads.empty()) return out;
  torch::NoGradGuard no_grad;
  // One fused norm per tensor, then one norm of the norms and a single device sync.
  const std::vector<torch::Tensor> norms = at::_foreach_norm(grads, 2);
  const torch::Tensor total = torch::stack(norms).to(torch::kFloat).norm(2);  // []
  out.total_norm = total.item<double>();
  out.finite = std::isfinite(out.total_norm);
  if (!out.finite || max_norm <= 0) return out;
  const double coef = max_norm / (out.total_norm + 1e-6);
  if (coef < 1.0) {
    at::_foreach_mul_(grads, coef);
    out.clipped = true;
  }
  return out;
}

}  // namespace detrain::train
