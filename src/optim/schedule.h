// Learning-rate, momentum, accumulation and loss-weight schedules as pure functions of the
// position in training (epoch, iteration), following the reference trainer (reference-yolo.md
// section 5). Rounding follows Python/numpy (half to even) so step counts match the reference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace detrain::config {
struct Experiment;
}

namespace detrain::optim {

// The schedule-relevant options (train.*, optim.*, data.batch), copied once by the trainer.
struct ScheduleSettings {
  int64_t epochs = 100;
  double lrf = 0.01;           // final lr as a fraction of the initial lr
  bool cos_lr = false;         // cosine instead of linear decay
  double warmup_epochs = 3.0;  // 0 disables warmup; capped at epochs - 1
  double warmup_momentum = 0.8;
  double warmup_bias_lr = 0.1;
  double momentum = 0.937;
  int64_t nbs = 64;    // nominal batch size: gradients accumulate to about this many images
  int64_t batch = 16;  // images per iteration (all ranks together)
};

// From the resolved config: train.{epochs, lrf, cos_lr, warmup_epochs, warmup_momentum,
// warmup_bias_lr, nbs}, optim.momentum and data.batch (one process; a distributed trainer sets
// `batch` to the global batch afterwards).
ScheduleSettings schedule_settings(const config::Experiment& experiment);

// numpy.interp(x, [x0, x1], [y0, y1]) with numpy's arithmetic: y0 at or left of x0, y1 at or
// right of x1, else slope * (x - x0) + y0.
double numpy_interp(double x, double x0, double x1, double y0, double y1);

// Python's round() / numpy's round(): nearest integer, ties to even.
int64_t round_half_even(double x);

// lf(epoch): the lr multiplier of `epoch` (0-based), linear max(1 - e/E, 0)(1 - lrf) + lrf or
// cosine ((1 - cos(pi e/E))/2)(lrf - 1) + 1. lf(0) = 1, lf(E) = lrf.
double lr_factor(const ScheduleSettings& s, int64_t epoch);

// Warmup length nw = round(min(warmup_epochs, epochs - 1) * batches_per_epoch), leaving the last
// epoch to regular training (Ultralytics 8.4.190 `_get_warmup_iterations`; no 100-iteration
// floor any more). -1 when that is 0: no iteration is then a warmup iteration.
int64_t warmup_iterations(const ScheduleSettings& s, int64_t batches_per_epoch);

// Micro-batches per optimizer step by the nominal batch: max(round(nbs / batch), 1). This is
// the factor that scales weight decay.
int64_t steady_accumulate(const ScheduleSettings& s);

// The accumulate a run steps with after warmup (and the target warmup ramps to): the steady
// value capped at the run's iterations, so a run shorter than one nominal batch still steps.
int64_t run_accumulate(const ScheduleSettings& s, int64_t batches_per_epoch);

// Weight decay handed to the optimizer: weight_decay * batch * steady_accumulate / nbs.
double scaled_weight_decay(const ScheduleSettings& s, double weight_decay);

// The end-to-end loss weight of the one-to-many branch for an epoch that follows
// `completed_epochs` finished epochs: max(1 - e / max(epochs - 1, 1), 0) * (start - end) + end.
// The one-to-one weight is 1 minus this.
double o2m_weight(int64_t completed_epochs, int64_t epochs, double start, double end);

// One optimizer parameter group as the schedule sees it.
struct GroupSchedule {
  double initial_lr = 0;  // lr0 times the group's multiplier
  bool bias = false;      // warmup starts at warmup_bias_lr instead of 0
};

// Hyper-parameters for one iteration.
struct IterationHyper {
  std::vector<double> lr;  // [G] per group
  double momentum = 0;     // every group (SGD momentum, Muon beta)
  int64_t accumulate = 1;  // micro-batches per optimizer step
  bool warmup = false;     // ni <= nw
};

// The whole schedule of one run. The global iteration is ni = epoch * batches_per_epoch + iter.
// During warmup (ni <= nw) lr, momentum and accumulate are interpolated from their warmup start
// values; afterwards lr = initial_lr * lf(epoch), momentum = momentum and accumulate is
// run_accumulate.
class TrainSchedule {
 public:
  TrainSchedule(ScheduleSettings settings, int64_t batches_per_epoch,
                std::vector<GroupSchedule> groups);

  IterationHyper at(int64_t epoch, int64_t iter_in_epoch) const;
  double lr(size_t group, int64_t epoch, int64_t ni) const;
  double momentum(int64_t ni) const;
  int64_t accumulate(int64_t ni) const;

  // The reference steps the optimizer when at least `accumulate` iterations passed since the
  // last step (last_step_ni starts at -1; gradients carry over epoch ends).
  static bool optimizer_step_due(int64_t ni, int64_t last_step_ni, int64_t accumulate) {
    return ni - last_step_ni >= accumulate;
  }

  int64_t warmup_iters() const { return warmup_iters_; }
  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  const ScheduleSettings& settings() const { return settings_; }
  size_t num_groups() const { return groups_.size(); }

 private:
  ScheduleSettings settings_;
  int64_t batches_per_epoch_;
  std::vector<GroupSchedule> groups_;
  int64_t warmup_iters_;
};

}  // namespace detrain::optim
