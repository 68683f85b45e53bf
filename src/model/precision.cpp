// Forward-pass precision; see precision.h.
#include "model/precision.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "common/errors.h"

namespace detrain::model {

Precision parse_precision(const std::string& text) {
  if (text == "auto") return Precision::kAuto;
  if (text == "bf16") return Precision::kBf16;
  if (text == "bf16-always") return Precision::kBf16Always;
  if (text == "fp32") return Precision::kFp32;
  throw ConfigError("config: train.precision is '" + text +
                    "'; expected auto, bf16, bf16-always or fp32");
}

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::kBf16:
      return "bf16";
    case Precision::kBf16Always:
      return "bf16-always";
    case Precision::kAuto:
      return "auto";
    case Precision::kFp32:
      break;
  }
  return "fp32";
}

PrecisionChoice choose_auto_precision(const AutoPrecisionInputs& in) {
  if (in.cuda) return {Precision::kBf16, "CUDA"};
  const std::string isa = cpu_isa_name(in.cpu);
  if (in.cpu.x86 && !in.cpu.avx2)
    return {Precision::kFp32, isa + " CPU, where BF16 convolutions are not known to be fast"};
  if (in.cpu.x86 && !in.cpu.avx512_bf16 && !in.cpu.amx_bf16)
    return {Precision::kFp32, isa +
                                  " CPU without native BF16 (AVX512-BF16 or AMX-BF16), where "
                                  "BF16 steps were measured 1.8-8x fp32's"};
  if (in.distributed) return {Precision::kBf16, isa + " CPU (ranks do not check the load)"};
  if (!in.load) return {Precision::kBf16, isa + " CPU, load unknown"};
  const std::string load = format_machine_load(*in.load);
  if (machine_is_busy(*in.load, in.threads)) {
    if (in.threads_follow_load)
      return {Precision::kBf16, isa + " CPU busy with other work at start (" + load +
                                    "): BF16 on the threads its idle cores hold"};
    return {Precision::kFp32, isa + " CPU busy with other work at start (" + load +
                                  "), where BF16 steps on " + std::to_string(in.threads) +
                                  " threads were measured slower than fp32"};
  }
  return {Precision::kBf16, isa + " CPU, idle at start (" + load + ")"};
}

Precision effective_precision(Precision requested, const torch::Device& device,
                              bool threads_follow_load) {
  if (requested == Precision::kBf16Always) return Precision::kBf16;
  if (requested == Precision::kAuto) {
    AutoPrecisionInputs in;
    in.cuda = !device.is_cpu();
    in.cpu = cpu_features();
    in.threads = compat::num_threads();
    const char* world = std::getenv("WORLD_SIZE");
    in.distributed = world != nullptr && std::atoi(world) > 1;
    in.threads_follow_load = threads_follow_load;
    if (!in.cuda && !in.distributed) in.load = startup_machine_load();
    const PrecisionChoice choice = choose_auto_precision(in);
    spdlog::info("train.precision=auto: {} ({})", precision_name(choice.precision), choice.reason);
    return choice.precision;
  }
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
