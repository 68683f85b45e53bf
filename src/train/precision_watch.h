// train.precision=auto after the start: the choice is made on the load at start
// (model/precision.h), and load that arrives or leaves later would otherwise keep a run in the
// precision that is now the slower one (BF16 measured 1.35-1.5x fp32's step beside other work,
// 0.6-0.9x on idle cores). Between iterations, once an interval of training has passed, the
// trainer samples the other processes' runnable threads (its own left out) and switches when two
// samples in a row call for the other precision. No LibTorch here: the rule is tested on posed
// loads and clocks.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "common/machine_load.h"

namespace detrain::train {

class AutoPrecisionWatch {
 public:
  static constexpr double kIntervalS = 60;  // a 0.1 s sample every minute: 0.2 % of the time

  // `bf16`: what auto chose at start; `threads`: LibTorch's intra-op threads of the run.
  AutoPrecisionWatch(bool bf16, int threads, double interval_s = kIntervalS);

  struct Switch {
    bool bf16 = false;
    std::string reason;  // for the log line: the load that called for it
  };
  // Between iterations, with the run's clock in seconds: samples through `sample` once
  // interval_s has passed since the last sample (nothing when that returns nullopt), and returns
  // a switch when this sample and the one before both call for the other precision.
  std::optional<Switch> poll(double now_s,
                             const std::function<std::optional<MachineLoad>()>& sample);
  bool bf16() const { return bf16_; }

 private:
  bool bf16_;
  int threads_;
  double interval_s_;
  double last_s_ = 0;
  int calls_for_other_ = 0;  // consecutive samples that called for the other precision
};

}  // namespace detrain::train
