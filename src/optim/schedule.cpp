// Training schedules; see schedule.h. No LibTorch: these are plain double functions.
#include "optim/schedule.h"

#include <algorithm>
#include <cmath>

#include "common/errors.h"
#include "config/experiment.h"

namespace detrain::optim {

ScheduleSettings schedule_settings(const config::Experiment& e) {
  ScheduleSettings s;
  s.epochs = e.train.epochs;
  s.lrf = e.train.lrf;
  s.cos_lr = e.train.cos_lr;
  s.warmup_epochs = e.train.warmup_epochs;
  s.warmup_momentum = e.train.warmup_momentum;
  s.warmup_bias_lr = e.train.warmup_bias_lr;
  s.momentum = e.optim.momentum;
  s.nbs = e.train.nbs;
  s.batch = e.data.batch;
  return s;
}

double numpy_interp(double x, double x0, double x1, double y0, double y1) {
  if (x <= x0) return y0;
  if (x >= x1) return y1;
  const double slope = (y1 - y0) / (x1 - x0);
  return slope * (x - x0) + y0;
}

int64_t round_half_even(double x) {
  // Explicit instead of std::nearbyint, whose result depends on the global rounding mode.
  const double floor_x = std::floor(x);
  const double diff = x - floor_x;
  if (diff < 0.5) return static_cast<int64_t>(floor_x);
  if (diff > 0.5) return static_cast<int64_t>(floor_x) + 1;
  const auto lower = static_cast<int64_t>(floor_x);
  return lower % 2 == 0 ? lower : lower + 1;
}

double lr_factor(const ScheduleSettings& s, int64_t epoch) {
  const double e = static_cast<double>(epoch);
  const double total = static_cast<double>(s.epochs);
  if (s.cos_lr) {
    const double ramp = std::max((1.0 - std::cos(e * M_PI / total)) / 2.0, 0.0);
    return ramp * (s.lrf - 1.0) + 1.0;
  }
  return std::max(1.0 - e / total, 0.0) * (1.0 - s.lrf) + s.lrf;
}

int64_t warmup_iterations(const ScheduleSettings& s, int64_t batches_per_epoch) {
  const double epochs = std::min(s.warmup_epochs, std::max<double>(s.epochs - 1, 0));
  if (epochs <= 0) return -1;
  const int64_t nw = round_half_even(epochs * static_cast<double>(batches_per_epoch));
  return nw > 0 ? nw : -1;
}

int64_t steady_accumulate(const ScheduleSettings& s) {
  return std::max<int64_t>(
      round_half_even(static_cast<double>(s.nbs) / static_cast<double>(s.batch)), 1);
}

int64_t run_accumulate(const ScheduleSettings& s, int64_t batches_per_epoch) {
  return std::max<int64_t>(std::min(steady_accumulate(s), batches_per_epoch * s.epochs), 1);
}

double scaled_weight_decay(const ScheduleSettings& s, double weight_decay) {
  return weight_decay * static_cast<double>(s.batch) * static_cast<double>(steady_accumulate(s)) /
         static_cast<double>(s.nbs);
}

double o2m_weight(int64_t completed_epochs, int64_t epochs, double start, double end) {
  const double span = static_cast<double>(std::max<int64_t>(epochs - 1, 1));
  const double ramp = std::max(1.0 - static_cast<double>(completed_epochs) / span, 0.0);
  return ramp * (start - end) + end;
}

TrainSchedule::TrainSchedule(ScheduleSettings settings, int64_t batches_per_epoch,
                             std::vector<GroupSchedule> groups)
    : settings_(settings),
      batches_per_epoch_(batches_per_epoch),
      groups_(std::move(groups)),
      warmup_iters_(warmup_iterations(settings, batches_per_epoch)) {
  if (batches_per_epoch <= 0)
    throw ConfigError("training schedule: the training set yields no batch (" +
                      std::to_string(batches_per_epoch) +
                      " per epoch); use a smaller data.batch or more images");
  if (settings.epochs <= 0 || settings.batch <= 0 || settings.nbs <= 0)
    throw ConfigError("training schedule: epochs, batch and nbs must be positive");
}

double TrainSchedule::lr(size_t group, int64_t epoch, int64_t ni) const {
  const GroupSchedule& g = groups_.at(group);
  const double target = g.initial_lr * lr_factor(settings_, epoch);
  if (ni > warmup_iters_) return target;
  const double start = g.bias ? settings_.warmup_bias_lr : 0.0;
  return numpy_interp(static_cast<double>(ni), 0.0, static_cast<double>(warmup_iters_), start,
                      target);
}

double TrainSchedule::momentum(int64_t ni) const {
  if (ni > warmup_iters_) return settings_.momentum;
  return numpy_interp(static_cast<double>(ni), 0.0, static_cast<double>(warmup_iters_),
                      settings_.warmup_momentum, settings_.momentum);
}

int64_t TrainSchedule::accumulate(int64_t ni) const {
  const int64_t target = run_accumulate(settings_, batches_per_epoch_);
  if (ni > warmup_iters_) return target;
  const double x = numpy_interp(static_cast<double>(ni), 0.0, static_cast<double>(warmup_iters_),
                                1.0, static_cast<double>(target));
  return std::max<int64_t>(1, round_half_even(x));
}

IterationHyper TrainSchedule::at(int64_t epoch, int64_t iter_in_epoch) const {
  const int64_t ni = epoch * batches_per_epoch_ + iter_in_epoch;
  IterationHyper h;
  h.lr.reserve(groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) h.lr.push_back(lr(g, epoch, ni));
  h.momentum = momentum(ni);
  h.accumulate = accumulate(ni);
  h.warmup = ni <= warmup_iters_;
  return h;
}

}  // namespace detrain::optim
