// What a training run shows in TensorBoard (`tensorboard --logdir runs`), written by rank 0 into
// its run directory: every scalar of each metrics.jsonl row (tags iter/<key>, step = iterations
// done), every column of each results.csv row (the reference's column names as tags, as
// Ultralytics' TensorBoard callback names them: train/box_loss, metrics/mAP50-95(B), lr/pg0,
// step = epoch), the resolved config as text and the run's plots as images.
// Resume: a process that continues from a checkpoint opens a new event file that starts with a
// SessionLog START (tensorboard_summaries.h), so readers drop whatever the previous process wrote
// past the checkpoint and see every step once, with the resumed run's values.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "report/tensorboard_events.h"

namespace detrain::report {

using Scalars = std::vector<std::pair<std::string, double>>;

// A metrics.jsonl row's scalars: loss {"box": ..} -> iter/box_loss, lr [..] -> iter/lr/pg<i>,
// step -> iter/optimizer_steps, every other number -> iter/<key> (null, a non-finite number,
// -> NaN); epoch and iter are the step instead.
Scalars iteration_scalars(const nlohmann::ordered_json& row);

// A results.csv row's scalars: every column but epoch (the step), named as the column.
Scalars epoch_scalars(const std::vector<std::string>& columns, const std::vector<double>& row);

// The run's plots that exist in `dir` and their image tags: results.png as plots/results, and
// when `validated` the validation pictures: confusion matrices and curves (plots/<stem>) and the
// batch mosaics (val_batches/<stem>), in name order.
std::vector<std::pair<std::string, std::string>> plot_images(const std::string& dir,
                                                             bool validated);

// Images go in at epochs 1, 2, 4, 8, ... and at the run's last epoch: a long run's event file
// holds a dozen copies of each plot, not hundreds.
bool images_at_epoch(int64_t epoch, bool last_epoch);

class TensorBoardLog {
 public:
  // A new event file in `run_dir`; `batches_per_epoch` turns (epoch, iter) into steps.
  TensorBoardLog(const std::string& run_dir, int64_t batches_per_epoch);

  // Iterations done after iteration `iter` (0-based) of epoch `epoch` (0-based): the step of
  // that metrics.jsonl row, on the same axis as the epochs' steps (epochs done).
  int64_t iteration_step(int64_t epoch, int64_t iter) const;

  // A new run: START at step 0 (a reused directory's older events are dropped) and the config.
  void start(const std::string& config_yaml);
  // A run resumed before iteration `iter` of epoch `epoch` (0-based: `epoch` epochs are done).
  // `metrics_jsonl` (already cut to that point) and `results_csv` (still as the previous process
  // left it) tell what the previous process wrote; see resume_start_step.
  void resume(int64_t epoch, int64_t iter, const std::string& config_yaml,
              const std::string& metrics_jsonl, const std::string& results_csv);
  // The same process went back to the start of iteration `iter` of epoch `epoch` (a rollback
  // after divergence): what it logged past that point is dropped.
  void rewind(int64_t epoch, int64_t iter);

  void add_iteration(const nlohmann::ordered_json& row);  // a metrics.jsonl row
  void add_epoch(const std::vector<std::string>& columns, const std::vector<double>& row);
  void add_images(int64_t epoch, const std::vector<std::pair<std::string, std::string>>& images);

  const std::string& path() const { return file_.path(); }

 private:
  EventFile file_;
  int64_t batches_per_epoch_;
};

// Where a resumed run's START goes. A START at step s drops every earlier event with a step >= s
// from every tag, iteration and epoch tags alike (they share one axis only in part: epochs count
// 1, 2, ..., iterations count 1, 2, ... per iteration). Normally the step after the checkpoint
// (`first_new_step`): the epochs' events are written only once their checkpoint is saved, so
// none lies past it. When the previous process had finished epochs past the checkpoint (a resume
// from an older weights/epochN.ckpt) the START goes to `epochs_done + 1` instead, and the
// iteration rows it drops that the resumed run keeps are written again (`replay`).
struct ResumeStart {
  int64_t step = 0;
  bool replay = false;
};
ResumeStart resume_start_step(int64_t epochs_done, int64_t first_new_step,
                              int64_t epochs_logged_before);

}  // namespace detrain::report
