// The numeric precision a model's forward pass runs in (training, validation, predict): the BF16
// autocast scope around it (CPU and CUDA alike; master weights, loss and optimizer stay fp32).
// Differs from the reference: BF16 instead of FP16 + GradScaler (no loss scaling needed), and
// the default (auto) picks fp32 where BF16 was measured slower: x86 CPUs without native BF16, and
// CPUs already busy with other work when the run starts
// (docs/perf/2026-12-07-openmp-wait-and-precision.md).
#pragma once

#include <torch/torch.h>

#include <optional>
#include <string>

#include "common/cpu_features.h"
#include "common/machine_load.h"
#include "compat/torch_compat.h"

namespace detrain::model {

// kBf16Always: BF16 even on a CPU where it is slow (to measure that); kAuto: the rule below.
// Neither is ever an effective precision.
enum class Precision { kFp32, kBf16, kBf16Always, kAuto };

// "auto" | "bf16" | "bf16-always" | "fp32" (train.precision); throws ConfigError otherwise.
Precision parse_precision(const std::string& text);
const char* precision_name(Precision precision);

// What train.precision=auto decides from (a plain struct, so tests can pose any machine).
struct AutoPrecisionInputs {
  bool cuda = false;
  CpuFeatures cpu;
  std::optional<MachineLoad> load;  // when the run started; nullopt: unknown
  int threads = 1;                  // LibTorch's intra-op threads
  bool distributed = false;  // ranks started apart would sample different loads: not used then
  // runtime.threads=0 on a CPU: the run answers a busy machine with fewer intra-op threads
  // (threads_idle_cpus_hold), not with fp32.
  bool threads_follow_load = false;
};
struct PrecisionChoice {
  Precision precision = Precision::kBf16;
  std::string reason;  // for the log line: "AVX512-BF16 CPU, idle: 0.1 other runnable ..."
};
// BF16 on CUDA and on x86 CPUs with native BF16, AVX512-BF16 or AMX-BF16 (measured 0.61-0.88x
// fp32's step on a Zen 4); fp32 on x86 CPUs without it (LibTorch 2.11's oneDNN capped to
// AVX-512 without BF16: 1.8-1.9x fp32's step; to AVX2: 6-8x; docs/perf/2026-12-07-fused-bn-silu.md)
// and, when the user fixed the thread count, on a CPU whose idle cores cannot hold our threads
// (BF16 measured 1.3-1.5x fp32's step beside other work on two threads, where oneDNN's BF16
// weight gradients stall on a descheduled partner thread). With the thread count left to the run
// a busy CPU keeps BF16 on fewer threads: on one thread beside a 2-thread PyTorch process BF16
// took 0.6x fp32's step on one and 0.55-0.65x fp32's on two (docs/perf/2026-12-08-busy-cores.md).
// Other architectures: BF16.
PrecisionChoice choose_auto_precision(const AutoPrecisionInputs& inputs);

// The precision a run uses on `device`: `requested`, except that kAuto follows
// choose_auto_precision for this machine (one info line saying what it chose and why), kBf16
// becomes kFp32 on a CPU without fast BF16 convolutions (compat::cpu_has_fast_bf16_conv: x86
// without AVX2, with a warning) and kBf16Always becomes kBf16. `threads_follow_load`: see
// AutoPrecisionInputs.
Precision effective_precision(Precision requested, const torch::Device& device,
                              bool threads_follow_load = false);

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
