// Forward-pass precision; see precision.h.
#include "model/precision.h"

#include <spdlog/spdlog.h>

#include "common/errors.h"

namespace detrain::model {

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

}  // namespace detrain::model
