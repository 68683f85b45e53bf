// The end of an epoch on rank 0: validation of the EMA model (every epoch under train.val,
// always after the last), its plots and predictions.json, the epoch record into results.csv,
// results.png and the epoch line, the best-model choice, and the checkpoints (last always,
// best when the fitness improved). The other ranks only advance and wait (trainer.cpp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "train/metrics_log.h"
#include "train/run_dir.h"
#include "train/train_parts.h"
#include "train/train_state.h"

namespace detrain::train {

class EpochEnd {
 public:
  // Opens results.csv (a resumed run keeps the rows of its completed epochs).
  // `can_roll_back`: a non-finite validation may roll the run back (one process only: the
  // other ranks do not validate, so they could not roll back with rank 0).
  EpochEnd(const config::ResolvedConfig& resolved, const TrainingData& data, TrainParts& parts,
           const RunPaths& paths, bool resuming, int64_t completed_epochs, bool can_roll_back);

  // Finishes epoch `state.position.epoch` that trained for `seconds`: validates, records,
  // picks the best, advances `state` to the next epoch and saves. Returns why the run must
  // roll back instead (a non-finite validation), with `state` untouched.
  std::optional<std::string> finish(TrainState& state, double seconds);

  // The last validation's COCO stats (empty before any).
  const std::vector<double>& box_stats() const { return box_stats_; }
  const std::vector<double>& keypoint_stats() const { return keypoint_stats_; }

 private:
  const config::ResolvedConfig& resolved_;
  const config::Experiment& x_;
  const TrainingData& data_;
  TrainParts& parts_;
  RunPaths paths_;
  bool can_roll_back_;
  std::unique_ptr<ResultsCsv> results_;
  std::vector<double> box_stats_, keypoint_stats_;
};

}  // namespace detrain::train
