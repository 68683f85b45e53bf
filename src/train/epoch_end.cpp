// See epoch_end.h.
#include "train/epoch_end.h"

#include <spdlog/fmt/fmt.h>

#include <cmath>
#include <limits>

#include "ckpt/checkpoint_files.h"
#include "eval/predictions_json.h"
#include "infer/validate.h"
#include "report/plots.h"
#include "report/val_plots.h"
#include "train/divergence.h"
#include "train/epoch_record.h"
#include "train/run_log.h"

namespace detrain::train {

EpochEnd::EpochEnd(const config::ResolvedConfig& resolved, const TrainingData& data,
                   TrainParts& parts, const report::RunPaths& paths, bool resuming,
                   int64_t completed_epochs, bool can_roll_back,
                   report::TensorBoardLog* tensorboard)
    : resolved_(resolved),
      x_(resolved.experiment),
      data_(data),
      parts_(parts),
      paths_(paths),
      can_roll_back_(can_roll_back),
      tensorboard_(tensorboard) {
  const auto columns =
      results_columns(parts.criterion->names(), parts.model->head()->options().pose(),
                      static_cast<int>(parts.optimizer->num_groups()));
  results_ = std::make_unique<report::ResultsCsv>(
      resuming ? report::ResultsCsv::resume(paths.results_csv, columns, completed_epochs)
               : report::ResultsCsv(paths.results_csv, columns));
}

EpochVerdict EpochEnd::finish(TrainState& state, double seconds, bool time_up) {
  const int64_t epoch = state.position.epoch;
  loss::Criterion& criterion = *parts_.criterion;
  EpochRecord record;
  record.epoch = epoch + 1;
  record.seconds = seconds;
  record.loss_names = criterion.names();
  for (const auto& [name, value] : state.running.means(record.loss_names))
    record.train_losses.push_back(value);
  record.pose = parts_.model->head()->options().pose();

  const bool last_epoch = time_up || epoch + 1 >= state.epochs;
  std::optional<infer::ValidationResult> v;
  if (x_.train.val || last_epoch || state.stopper.possible_stop) {
    ValidationProgress val_progress(x_, parts_.validation->images());
    std::optional<report::ValPlots> plots;
    if (x_.train.plots)
      plots.emplace(data_.dataset, parts_.validation->records(), paths_.dir, x_.train.plot_batches,
                    x_.val.conf);
    auto observer = [&](int64_t index, const infer::ValBatch& b,
                        const std::vector<infer::ImageDetections>& dets) {
      val_progress.add(static_cast<int64_t>(b.frames.size()));
      if (plots) plots->add(index, b, dets);
    };
    v = validate_ema(parts_, observer);
    if (can_roll_back_ && !validation_finite(*v))
      return {fmt::format("non-finite validation loss or fitness after epoch {}", epoch + 1), {}};
    show(infer::stats_table(*v));
    if (plots) plots->save(*v);
    if (x_.val.save_json) eval::write_predictions_json(paths_.file("predictions.json"), v->records);
    record.box = curve_metrics(v->box);
    if (record.pose && v->keypoints) record.keypoints = curve_metrics(*v->keypoints);
    record.val_losses = v->losses;
  }
  for (size_t g = 0; g < parts_.optimizer->num_groups(); ++g)
    record.lrs.push_back(parts_.optimizer->lr(g));
  const std::vector<double> row = record.values();
  results_->append(row);
  state.history.push_back(row);
  if (x_.train.plots) report::save_results_png(results_->table(), paths_.results_png);
  if (v) show(epoch_line(record, state.epochs));

  const double fitness = v ? v->fitness() : -std::numeric_limits<double>::infinity();
  if (v) {
    box_stats_ = v->box.stats;
    keypoint_stats_ = v->keypoints ? v->keypoints->stats : std::vector<double>{};
  }
  const bool improved = v && fitness > state.best_fitness;
  if (improved) {
    state.best_fitness = fitness;
    state.best_epoch = epoch;
  }
  EpochVerdict verdict;
  const bool no_progress = state.stopper.update(
      epoch + 1, v ? std::optional<double>(fitness) : std::nullopt, x_.train.patience);
  if (no_progress && epoch + 1 < state.epochs)
    verdict.stop = state.stopper.message(x_.train.patience);
  if (x_.train.time > 0) {
    const RunLength length = run_length(x_.train.time, state.train_seconds, epoch + 1, time_up);
    state.epochs = length.epochs;
    if (verdict.stop.empty()) verdict.stop = length.stop;
  }
  // The checkpoint describes the state after this epoch.
  state.advance_epoch(!verdict.stop.empty());
  const ckpt::Checkpoint last = capture_checkpoint(state, parts_, resolved_);
  ckpt::save_checkpoint(paths_.last_ckpt, last);
  if (improved) ckpt::publish_best(paths_, last, x_.train.best_half);
  if (x_.train.save_period > 0 && (epoch + 1) % x_.train.save_period == 0)
    ckpt::save_checkpoint(paths_.file("weights/epoch" + std::to_string(epoch + 1) + ".ckpt"), last);
  if (tensorboard_) {
    tensorboard_->add_epoch(results_->table().columns, row);
    if (x_.train.plots && report::images_at_epoch(epoch + 1, state.position.finished))
      tensorboard_->add_images(epoch + 1, report::plot_images(paths_.dir, v.has_value()));
  }
  return verdict;
}

}  // namespace detrain::train
