// See iteration_report.h.
#include "train/iteration_report.h"

#include <iostream>

#include "common/log.h"
#include "common/memory.h"
#include "compat/torch_compat.h"

namespace detrain::train {

namespace {

double memory_gb(const torch::Device& device) {
  if (device.is_cuda()) return compat::cuda_memory_stats(device).reserved_bytes / 1e9;
  return resident_memory_bytes() / 1e9;
}

}  // namespace

IterationReport::IterationReport(const config::Experiment& x, bool main_rank,
                                 const std::string& metrics_jsonl, torch::Device device,
                                 report::TensorBoardLog* tensorboard)
    : x_(x),
      device_(device),
      progress_(
          main_rank ? parse_progress_mode(x.train.progress, "train.progress") : ProgressMode::kOff,
          std::cout, stdout_is_tty(), x.train.progress_interval_s),
      tensorboard_(tensorboard) {
  if (!metrics_jsonl.empty()) jsonl_ = std::make_unique<report::MetricsJsonl>(metrics_jsonl);
}

void IterationReport::start_epoch(int64_t epoch, int64_t batches,
                                  const std::vector<std::string>& loss_names) {
  progress_.header(loss_names);
  loss_names_ = loss_names;
  epoch_clock_.reset();
  wait_ms_total_ = 0;
  images_seen_ = 0;
  state_ = ProgressState{};
  state_.epoch = epoch;
  state_.epochs = x_.train.epochs;
  state_.total = batches;
}

void IterationReport::add(int64_t iter, const StepResult& step, const TrainState& state,
                          const optim::Optimizer& optimizer, double data_wait_ms, double step_ms) {
  ++iterations_;
  wait_ms_total_ += data_wait_ms;
  images_seen_ += step.images;
  state_.iter = iter + 1;
  state_.epochs = state.epochs;  // train.time re-estimates it
  state_.losses = state.running.means(loss_names_);
  state_.instances = step.instances;
  state_.imgsz = step.imgsz;
  state_.elapsed_s = epoch_clock_.seconds();
  state_.images_per_s = state_.elapsed_s > 0 ? images_seen_ / state_.elapsed_s : 0;
  state_.data_wait_share = state_.elapsed_s > 0 ? wait_ms_total_ / 1e3 / state_.elapsed_s : 0;
  state_.memory_gb = memory_gb(device_);
  const int64_t left_in_run = (state_.epochs - state_.epoch) * state_.total - iter - 1;
  state_.run_eta_s = run_clock_.seconds() / iterations_ * left_in_run;
  progress_.update(state_);

  const bool epoch_end = iter + 1 == state_.total;
  if (jsonl_ && x_.train.log_every > 0 && (iter % x_.train.log_every == 0 || epoch_end)) {
    report::StepRecord rec;
    rec.epoch = state_.epoch;
    rec.iter = iter;
    rec.optimizer_steps = state.position.optimizer_steps;
    rec.losses = state_.losses;
    for (size_t g = 0; g < optimizer.num_groups(); ++g) rec.lr.push_back(optimizer.lr(g));
    rec.instances = state_.instances;
    rec.imgsz = state_.imgsz;
    rec.images_per_s = state_.images_per_s;
    rec.data_wait_ms = data_wait_ms;
    rec.step_ms = step_ms;
    rec.memory_gb = state_.memory_gb;
    jsonl_->append(rec);
    if (tensorboard_) tensorboard_->add_iteration(report::step_record_json(rec));
  }
}

void IterationReport::finish_epoch() {
  progress_.finish(state_);
  log_file_only(ProgressLine::header_text(loss_names_) + "\n" + ProgressLine::line_text(state_));
}

}  // namespace detrain::train
