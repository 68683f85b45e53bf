// The training loop's own state, typed: where the schedule stands, the epoch's running loss
// sums, the per-epoch rows so far, the best epoch, the divergence learning-rate scale and the
// world size that wrote it. This file alone converts it (with the parts' weights, optimizer,
// EMA, generators and mid-accumulation gradients) to and from a Checkpoint: the names under
// which the loop's extras are stored appear nowhere else.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "ckpt/checkpoint.h"
#include "config/config.h"
#include "train/early_stopping.h"
#include "train/train_parts.h"
#include "train/trainer.h"

namespace detrain::train {

// Running means of the loss items over the epoch (what the progress line and logs show).
struct RunningLoss {
  torch::Tensor sum;  // [n] float64
  int64_t count = 0;
  void add(const torch::Tensor& items);
  std::vector<std::pair<std::string, double>> means(const std::vector<std::string>& names) const;
};

struct TrainState {
  ckpt::SchedulePosition position;
  RunningLoss running;                       // this epoch's loss sums
  std::vector<std::vector<double>> history;  // results.csv rows so far
  double best_fitness = -std::numeric_limits<double>::infinity();
  int64_t best_epoch = -1;  // 0-based
  double lr_scale = 1.0;    // the divergence policy's learning-rate factor
  int64_t world_size = 1;   // ranks of the run (a resume must use as many)
  EarlyStopping stopper;    // train.patience
  // Epochs of the run: train.epochs, or under train.time the count re-estimated after every
  // epoch (0 in a state read from a checkpoint without one: the config's then).
  int64_t epochs = 0;
  double train_seconds = 0;  // training wall time so far, resumed parts included (train.time)

  // Epoch `position.epoch` is done: the next one starts (finished after `epochs`, or when
  // `stop` ends the run early).
  void advance_epoch(bool stop = false);
  // Epochs completed, optimizer steps and the best epoch into a run's summary.
  void summarize(TrainSummary& summary) const;
};

// Everything needed to continue exactly here: `state` plus the parts' model, EMA, optimizer,
// generators and accumulated gradients.
ckpt::Checkpoint capture_checkpoint(const TrainState& state, const TrainParts& parts,
                                    const config::ResolvedConfig& resolved);

// The loop state a checkpoint holds (position, running sums, rows, best, lr scale, world,
// early-stopping state, the epoch count under train.time, the training time so far).
TrainState state_of(const ckpt::Checkpoint& checkpoint);

// Puts the checkpoint's weights, EMA, optimizer state, generators and gradients into `parts`.
void restore_parts(TrainParts& parts, const ckpt::Checkpoint& checkpoint,
                   const std::string& source);

// A rollback: the weights, optimizer, generators and loop position of `good` (taken at the
// start of the epoch); the rows, best and learning-rate scale of `state` stay.
void rewind(TrainParts& parts, TrainState& state, const ckpt::Checkpoint& good);

}  // namespace detrain::train
