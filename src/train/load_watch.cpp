// Load re-checked while training; see load_watch.h.
#include "train/load_watch.h"

namespace detrain::train {

LoadWatch::LoadWatch(bool busy, int threads, double interval_s)
    : busy_(busy), threads_(threads), interval_s_(interval_s) {}

std::optional<LoadWatch::Change> LoadWatch::poll(
    double now_s, const std::function<std::optional<MachineLoad>()>& sample) {
  if (now_s - last_s_ < interval_s_) return std::nullopt;
  last_s_ = now_s;
  const std::optional<MachineLoad> load = sample();
  if (!load) return std::nullopt;
  // Busy as the start-time rule has it: the idle CPUs cannot hold all of the run's threads.
  const bool busy = machine_is_busy(*load, threads_);
  if (busy == busy_) {
    calls_for_other_ = 0;
    return std::nullopt;
  }
  if (++calls_for_other_ < 2) return std::nullopt;
  calls_for_other_ = 0;
  busy_ = busy;
  const std::string what = format_machine_load(*load);
  return Change{busy_, *load,
                busy ? "other work arrived: " + what : "the other work left: " + what};
}

}  // namespace detrain::train
