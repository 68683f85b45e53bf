// See run_log.h.
#include "train/run_log.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>

#include "common/log.h"
#include "common/progress.h"
#include "common/strings.h"
#include "data/loader.h"
#include "train/run_dir.h"

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

void report_mosaic(const config::Experiment& x, int64_t epoch) {
  const int64_t epochs = x.train.epochs, close = x.augment.close_mosaic;
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
  const RunPaths p = run_paths(s.run_dir);
  std::string text = std::to_string(s.epochs_completed) + " epochs (" +
                     std::to_string(s.optimizer_steps) + " optimizer steps) in " +
                     format_duration(s.total_s) + "; ";
  if (s.best_epoch >= 0)
    text += "best epoch " + std::to_string(s.best_epoch + 1) + " (fitness " +
            fixed(s.best_fitness, 4) + "): " + p.best_ckpt + " (" + file_size(p.best_ckpt) + ")";
  else
    text += "no validation, no best.ckpt";
  text += "\nlast (resumable): " + p.last_ckpt + " (" + file_size(p.last_ckpt) +
          "); plots and logs in " + s.run_dir;
  return text;
}

ValidationProgress::ValidationProgress(const config::Experiment& x, int64_t images)
    : images_(images) {
  const ProgressMode mode = parse_progress_mode(x.train.progress, "train.progress");
  live_ = mode == ProgressMode::kLive || (mode == ProgressMode::kAuto && stdout_is_tty());
}

void ValidationProgress::add(int64_t images) {
  done_ += images;
  if (live_)
    std::cout << "\r" << std::string(9, ' ') << "validating " << done_ << "/" << images_
              << " images" << std::flush;
}

ValidationProgress::~ValidationProgress() {
  if (live_ && done_ > 0) std::cout << "\r" << std::string(60, ' ') << "\r" << std::flush;
}

}  // namespace detrain::train
