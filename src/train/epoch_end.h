// The end of an epoch on rank 0: validation of the EMA model (every epoch under train.val,
// always after the last), its plots and predictions.json, the epoch record into results.csv,
// results.png and the epoch line, the best-model choice, whether the run ends here
// (train.patience, train.time, which also re-estimates the epoch count), and the checkpoints
// (last always, best when the fitness improved, weights/epochN.ckpt every train.save_period
// epochs), then the epoch's TensorBoard scalars and plots: after last.ckpt, so no event of an
// epoch lies past the checkpoint a resume continues from. The other ranks only advance and wait
// (trainer.cpp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "report/metrics_log.h"
#include "report/run_dir.h"
#include "report/tensorboard_log.h"
#include "train/train_parts.h"
#include "train/train_state.h"

namespace detrain::train {

// What the end of an epoch decided.
struct EpochVerdict {
  std::optional<std::string> problem;  // roll back instead (a non-finite validation)
  std::string stop;  // why the run ends after this epoch, before its epochs; empty: it goes on
};

class EpochEnd {
 public:
  // Opens results.csv (a resumed run keeps the rows of its completed epochs).
  // `can_roll_back`: a non-finite validation may roll the run back (one process only: the
  // other ranks do not validate, so they could not roll back with rank 0). `tensorboard`: where
  // the epochs go for TensorBoard (null: nowhere).
  EpochEnd(const config::ResolvedConfig& resolved, const TrainingData& data, TrainParts& parts,
           const report::RunPaths& paths, bool resuming, int64_t completed_epochs,
           bool can_roll_back, report::TensorBoardLog* tensorboard = nullptr);

  // Finishes epoch `state.position.epoch` that trained for `seconds`: validates, records,
  // picks the best, decides whether the run stops (`time_up`: train.time ran out inside the
  // epoch, which then counts as the last), updates `state.epochs` under train.time, advances
  // `state` to the next epoch and saves. With a problem, `state` is untouched.
  EpochVerdict finish(TrainState& state, double seconds, bool time_up);

  // The last validation's COCO stats (empty before any).
  const std::vector<double>& box_stats() const { return box_stats_; }
  const std::vector<double>& keypoint_stats() const { return keypoint_stats_; }

 private:
  const config::ResolvedConfig& resolved_;
  const config::Experiment& x_;
  const TrainingData& data_;
  TrainParts& parts_;
  report::RunPaths paths_;
  bool can_roll_back_;
  report::TensorBoardLog* tensorboard_;
  std::unique_ptr<report::ResultsCsv> results_;
  std::vector<double> box_stats_, keypoint_stats_;
};

}  // namespace detrain::train
