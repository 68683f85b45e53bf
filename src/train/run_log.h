// What a training run tells its user besides the progress line: the start-up config table and
// warnings, the mosaic-close notice, the validation progress, the final summary; and the
// plain copy of every console block in train.log, so a finished run can be read later.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"
#include "train/trainer.h"

namespace detrain::train {

// Prints `text` on stdout and appends it to train.log (log_file_only).
void show(const std::string& text);

// The config table (the keys that differ from the defaults; every key when `all`) and the
// warnings about settings that defeat themselves (close_mosaic >= epochs).
void report_start(const config::ResolvedConfig& resolved, bool all);

// Said once, when epoch `epoch` (0-based) is the first without mosaic.
void report_mosaic(const config::Experiment& x, int64_t epoch);

// The last lines of a run: epochs, total time, best epoch and fitness, best/last paths.
std::string final_summary(const TrainSummary& summary);

// "validating  24/48 images" rewritten in place on a terminal (live progress only), erased
// when done, so the validation table follows the epoch line directly.
class ValidationProgress {
 public:
  ValidationProgress(const config::Experiment& x, int64_t images);
  ~ValidationProgress();
  ValidationProgress(const ValidationProgress&) = delete;
  ValidationProgress& operator=(const ValidationProgress&) = delete;
  void add(int64_t images);

 private:
  bool live_ = false;
  int64_t images_ = 0, done_ = 0;
};

}  // namespace detrain::train
