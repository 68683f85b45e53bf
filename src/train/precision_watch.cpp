// train.precision=auto re-checked while training; see precision_watch.h.
#include "train/precision_watch.h"

namespace detrain::train {

AutoPrecisionWatch::AutoPrecisionWatch(bool bf16, int threads, double interval_s)
    : bf16_(bf16), threads_(threads), interval_s_(interval_s) {}

std::optional<AutoPrecisionWatch::Switch> AutoPrecisionWatch::poll(
    double now_s, const std::function<std::optional<MachineLoad>()>& sample) {
  if (now_s - last_s_ < interval_s_) return std::nullopt;
  last_s_ = now_s;
  const std::optional<MachineLoad> load = sample();
  if (!load) return std::nullopt;
  const bool busy = machine_is_busy(*load, threads_);
  // BF16 on idle cores, fp32 on busy ones: the start-time rule (model/precision.h).
  if (busy != bf16_) {
    calls_for_other_ = 0;
    return std::nullopt;
  }
  if (++calls_for_other_ < 2) return std::nullopt;
  calls_for_other_ = 0;
  bf16_ = !busy;
  const std::string what = format_machine_load(*load);
  return Switch{bf16_, busy ? "other work arrived: " + what +
                                  ", where BF16 steps were measured slower than fp32"
                            : "the other work left: " + what};
}

}  // namespace detrain::train
