// What each training iteration tells the user and the logs: the progress line (live on a
// terminal, plain lines otherwise), a metrics.jsonl line every train.log_every iterations and
// at the end of an epoch, and the epoch's last progress line in train.log. Ranks other than 0
// report nothing.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/progress.h"
#include "common/timer.h"
#include "config/config.h"
#include "optim/optimizer.h"
#include "report/metrics_log.h"
#include "report/tensorboard_log.h"
#include "train/train_state.h"
#include "train/train_step.h"

namespace detrain::train {

class IterationReport {
 public:
  // `metrics_jsonl`: the file to append to (empty: none, as on ranks > 0); `tensorboard` gets
  // the same rows (null: none).
  IterationReport(const config::Experiment& x, bool main_rank, const std::string& metrics_jsonl,
                  torch::Device device, report::TensorBoardLog* tensorboard = nullptr);

  void start_epoch(int64_t epoch, int64_t batches, const std::vector<std::string>& loss_names);
  // Iteration `iter` finished with `step`; `state` is the loop's state after it.
  void add(int64_t iter, const StepResult& step, const TrainState& state,
           const optim::Optimizer& optimizer, double data_wait_ms, double step_ms);
  // The epoch ran to its end: its final progress line, also in train.log.
  void finish_epoch();

 private:
  const config::Experiment& x_;
  torch::Device device_;
  ProgressLine progress_;
  std::unique_ptr<report::MetricsJsonl> jsonl_;
  report::TensorBoardLog* tensorboard_;
  Stopwatch run_clock_;  // since this process started its part of the run (whole-run ETA)
  int64_t iterations_ = 0;
  Stopwatch epoch_clock_;
  double wait_ms_total_ = 0;
  int64_t images_seen_ = 0;
  ProgressState state_;
  std::vector<std::string> loss_names_;
};

}  // namespace detrain::train
