// What a training run tells its user besides the progress line: the start-up config table and
// warnings, the mosaic-close notice, the validation progress, the final summary; and the
// plain copy of every console block in train.log, so a finished run can be read later.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>

#include "common/progress.h"
#include "config/config.h"
#include "train/trainer.h"

namespace detrain::train {

// Prints `text` on stdout and appends it to train.log (log_file_only).
void show(const std::string& text);

// The config table (the keys that differ from the defaults; every key when `all`) and the
// warnings about settings that defeat themselves (close_mosaic >= epochs).
void report_start(const config::ResolvedConfig& resolved, bool all);

// Said once, when epoch `epoch` (0-based) of `epochs` is the first without mosaic.
void report_mosaic(const config::Experiment& x, int64_t epoch, int64_t epochs);

// The last lines of a run: why it stopped before its epochs when it did, epochs, total time,
// best epoch and fitness, best/last paths.
std::string final_summary(const TrainSummary& summary);

// Validation progress, in the form of train.progress: on a terminal (live) "validating 24/48
// images" rewritten in place and erased when done, so the validation table follows the epoch
// line directly; in plain form (logs, pipes) a "validating 24/48 images  50%  00:03" line every
// train.progress_interval_s seconds; off: nothing. When the last image is in, the plain
// "validated 48 images in 00:03 (15.2 images/s)" line goes to the console (plain form) and, in
// every form, to train.log.
class ValidationProgress {
 public:
  using Clock = std::function<double()>;  // seconds, monotonic

  ValidationProgress(const config::Experiment& x, int64_t images);
  // `is_tty` decides ProgressMode::kAuto; `clock` defaults to a steady clock (tests pass theirs).
  ValidationProgress(ProgressMode mode, double interval_s, int64_t images, std::ostream& out,
                     bool is_tty, Clock clock = {});
  ~ValidationProgress();
  ValidationProgress(const ValidationProgress&) = delete;
  ValidationProgress& operator=(const ValidationProgress&) = delete;
  void add(int64_t images);

  static std::string line_text(int64_t done, int64_t images, double elapsed_s);
  static std::string final_text(int64_t images, double elapsed_s);

 private:
  void finish();

  ProgressMode mode_;
  double interval_s_;
  int64_t images_ = 0, done_ = 0;
  std::ostream& out_;
  Clock clock_;
  double start_s_ = 0, last_line_s_ = 0;
  bool live_open_ = false, finished_ = false;
};

}  // namespace detrain::train
