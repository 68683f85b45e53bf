// See early_stopping.h.
#include "train/early_stopping.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>

#include "common/progress.h"

namespace detrain::train {

bool EarlyStopping::update(int64_t epoch, std::optional<double> fitness, int64_t patience) {
  if (!fitness) return false;
  if (*fitness > best_fitness || best_fitness == 0.0) {
    best_epoch = epoch;
    best_fitness = *fitness;
  }
  possible_stop = patience > 0 && epoch - best_epoch >= patience - 1;
  return patience > 0 && epoch - best_epoch >= patience;
}

std::string EarlyStopping::message(int64_t patience) const {
  return fmt::format(
      "early stop: no fitness improvement in the last {} epochs (train.patience={}); the best "
      "was epoch {} (fitness {:.5f}, weights/best.ckpt); train.patience=0 never stops early",
      patience, patience, best_epoch, best_fitness);
}

RunLength run_length(double hours, double seconds, int64_t epochs_done, bool time_up) {
  // train.epochs' own maximum: a limit of hours over sub-second epochs stays a valid count.
  constexpr double kMaxEpochs = 1e6;
  const double limit = hours * 3600.0;
  RunLength out;
  if (time_up || seconds > limit) {
    out.epochs = epochs_done;
    out.stop = fmt::format("time limit: train.time={} h reached after {} epochs ({})", hours,
                           epochs_done, format_duration(seconds));
    return out;
  }
  const double mean = seconds / static_cast<double>(std::max<int64_t>(epochs_done, 1));
  const double fit = mean > 0 ? std::ceil(limit / mean) : kMaxEpochs;
  out.epochs = std::max(epochs_done, static_cast<int64_t>(std::min(fit, kMaxEpochs)));
  if (out.epochs == epochs_done)
    out.stop = fmt::format(
        "time limit: train.time={} h holds {} epochs of {} on average; stopped after them", hours,
        epochs_done, format_duration(mean));
  return out;
}

}  // namespace detrain::train
