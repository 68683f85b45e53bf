// See run_log.h.
#include "train/run_log.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <iostream>

#include "common/log.h"
#include "common/progress.h"
#include "common/strings.h"
#include "data/loader.h"
#include "report/run_dir.h"

namespace detrain::train {

namespace fs = std::filesystem;

void show(const std::string& text) {
  std::cout << text << (text.empty() || text.back() == '\n' ? "" : "\n") << std::flush;
  log_file_only(text);
}

void report_start(const config::ResolvedConfig& resolved, bool all) {
  show(config::table(resolved, all));
  const config::Experiment& x = resolved.experiment;
  if (x.augment.mosaic > 0 && x.augment.close_mosaic >= x.train.epochs)
    spdlog::warn(
        "augment.close_mosaic={} >= train.epochs={}: mosaic never runs; lower "
        "augment.close_mosaic (e.g. augment.close_mosaic={})",
        x.augment.close_mosaic, x.train.epochs, x.train.epochs / 3);
}

void report_mosaic(const config::Experiment& x, int64_t epoch, int64_t epochs) {
  const int64_t close = x.augment.close_mosaic;
  if (x.augment.mosaic > 0 && epoch > 0 && !data::mosaic_active(epoch, epochs, close) &&
      data::mosaic_active(epoch - 1, epochs, close))
    spdlog::info("closing mosaic (and mixup) for the last {} epochs (augment.close_mosaic)",
                 epochs - epoch);
}

namespace {

std::string file_size(const std::string& path) {
  std::error_code ec;
  const auto bytes = fs::file_size(path, ec);
  return ec ? std::string("missing") : human_bytes(static_cast<double>(bytes));
}

}  // namespace

std::string final_summary(const TrainSummary& s) {
  const report::RunPaths p = report::run_paths(s.run_dir);
  std::string text = s.stop_reason.empty() ? "" : s.stop_reason + "\n";
  text += std::to_string(s.epochs_completed) + " epochs (" + std::to_string(s.optimizer_steps) +
          " optimizer steps) in " + format_duration(s.total_s) + "; ";
  if (s.best_epoch >= 0)
    text += "best epoch " + std::to_string(s.best_epoch + 1) + " (fitness " +
            fixed(s.best_fitness, 4) + "): " + p.best_ckpt + " (" + file_size(p.best_ckpt) + ")";
  else
    text += "no validation, no best.ckpt";
  text += "\nlast (resumable): " + p.last_ckpt + " (" + file_size(p.last_ckpt) +
          "); plots and logs in " + s.run_dir;
  return text;
}

namespace {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

const std::string kIndent(9, ' ');  // under the epoch line's "Epoch" column

}  // namespace

ValidationProgress::ValidationProgress(const config::Experiment& x, int64_t images)
    : ValidationProgress(parse_progress_mode(x.train.progress, "train.progress"),
                         x.train.progress_interval_s, images, std::cout, stdout_is_tty()) {}

ValidationProgress::ValidationProgress(ProgressMode mode, double interval_s, int64_t images,
                                       std::ostream& out, bool is_tty, Clock clock)
    : mode_(mode),
      interval_s_(interval_s),
      images_(images),
      out_(out),
      clock_(clock ? std::move(clock) : Clock(steady_seconds)) {
  if (mode_ == ProgressMode::kAuto) mode_ = is_tty ? ProgressMode::kLive : ProgressMode::kPlain;
  start_s_ = last_line_s_ = clock_();
}

std::string ValidationProgress::line_text(int64_t done, int64_t images, double elapsed_s) {
  const double percent = images > 0 ? 100.0 * static_cast<double>(done) / images : 0.0;
  return kIndent + "validating " + std::to_string(done) + "/" + std::to_string(images) +
         " images  " + fixed(percent, 0) + "%  " + format_duration(elapsed_s);
}

std::string ValidationProgress::final_text(int64_t images, double elapsed_s) {
  return kIndent + "validated " + std::to_string(images) + " images in " +
         format_duration(elapsed_s) + " (" +
         fixed(elapsed_s > 0 ? static_cast<double>(images) / elapsed_s : 0.0, 1) + " images/s)";
}

void ValidationProgress::add(int64_t images) {
  if (finished_) return;
  done_ += images;
  const double now = clock_();
  if (mode_ == ProgressMode::kLive) {
    out_ << "\r" << kIndent << "validating " << done_ << "/" << images_ << " images" << std::flush;
    live_open_ = true;
  } else if (mode_ == ProgressMode::kPlain && done_ < images_ &&
             now - last_line_s_ >= interval_s_) {
    out_ << line_text(done_, images_, now - start_s_) << "\n" << std::flush;
    last_line_s_ = now;
  }
  if (done_ >= images_) finish();
}

void ValidationProgress::finish() {
  finished_ = true;
  if (live_open_) out_ << "\r" << std::string(60, ' ') << "\r" << std::flush;
  live_open_ = false;
  const std::string text = final_text(done_, clock_() - start_s_);
  if (mode_ == ProgressMode::kPlain) out_ << text << "\n" << std::flush;
  log_file_only(text);
}

ValidationProgress::~ValidationProgress() {
  // Cut short (an error, a stop): only the live line to clear.
  if (live_open_) out_ << "\r" << std::string(60, ' ') << "\r" << std::flush;
}

}  // namespace detrain::train
