// Load that arrives or leaves after the start of a CPU run. The start-time choices are made on
// the load at start: the intra-op thread count (runtime.threads=0: the cores the other work
// leaves idle) and, with a thread count the user fixed, train.precision=auto (fp32 on busy
// cores). Load that changes later would keep a run in the choice that is now the slower one:
// two BF16 threads beside a 2-thread PyTorch process took 1.6-2x the step of one
// (docs/perf/2026-12-08-busy-cores.md). Between iterations, once an interval of training has
// passed, the trainer samples the other processes' runnable threads (its own left out) and
// changes course when two samples in a row call for it. No LibTorch here: the rule is tested on
// posed loads and clocks.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "common/machine_load.h"

namespace detrain::train {

class LoadWatch {
 public:
  static constexpr double kIntervalS = 60;  // a 0.1 s sample every minute: 0.2 % of the time

  // `busy`: what the run started with (machine_is_busy at start); `threads`: the intra-op
  // threads the run takes on idle cores.
  LoadWatch(bool busy, int threads, double interval_s = kIntervalS);

  struct Change {
    bool busy = false;
    MachineLoad load;    // the sample that confirmed it
    std::string reason;  // for the log line: "other work arrived: 2.0 other runnable ..."
  };
  // Between iterations, with the run's clock in seconds: samples through `sample` once
  // interval_s has passed since the last sample (nothing when that returns nullopt), and returns
  // a change when this sample and the one before both say busy where the run is idle, or the
  // other way round.
  std::optional<Change> poll(double now_s,
                             const std::function<std::optional<MachineLoad>()>& sample);
  bool busy() const { return busy_; }

 private:
  bool busy_;
  int threads_;
  double interval_s_;
  double last_s_ = 0;
  int calls_for_other_ = 0;  // consecutive samples that called for the other state
};

}  // namespace detrain::train
