// See auto_resume.h.
#include "train/auto_resume.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include "ckpt/checkpoint.h"
#include "ckpt/initial_weights.h"
#include "common/errors.h"
#include "report/numbered_dir.h"
#include "report/run_dir.h"

namespace detrain::train {
namespace fs = std::filesystem;

namespace {

// weights/last.ckpt, then weights/epochN.ckpt from the largest N down: the order in which a run
// wrote them, newest first.
std::vector<std::string> checkpoints_newest_first(const report::RunPaths& paths) {
  std::vector<std::string> out;
  std::error_code ec;
  if (fs::is_regular_file(paths.last_ckpt, ec)) out.push_back(paths.last_ckpt);
  std::vector<std::pair<long, std::string>> epochs;
  for (const auto& entry : fs::directory_iterator(paths.weights_dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string digits = name.size() > 10 ? name.substr(5, name.size() - 10) : "";
    if (name.rfind("epoch", 0) != 0 || name.size() < 11 ||
        name.compare(name.size() - 5, 5, ".ckpt") != 0 || digits.empty() ||
        digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9)
      continue;
    epochs.emplace_back(std::stol(digits), entry.path().string());
  }
  std::sort(epochs.rbegin(), epochs.rend());
  for (auto& e : epochs) out.push_back(std::move(e.second));
  return out;
}

}  // namespace

bool auto_resume_enabled(const std::string& mode, bool restarted) {
  return mode == "auto" || (mode == "restarts" && restarted);
}

AutoResumeChoice find_auto_resume(const config::TrainOptions& train, bool restarted) {
  const std::string why =
      fmt::format("train.resume={}{}", train.resume, restarted ? " (a restarted job)" : "");
  const std::string dir = train.exist_ok ? (fs::path(train.project) / train.name).string()
                                         : report::latest_numbered_dir(train.project, train.name);
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) {
    spdlog::info("{}: no run {}/{} to continue; starting a new run", why, train.project,
                 train.name);
    return {};
  }
  const report::RunPaths paths = report::run_paths(dir);
  const std::vector<std::string> candidates = checkpoints_newest_first(paths);
  std::string damaged;  // "; <file> is damaged (<why>), skipped" for each one passed over
  for (const std::string& path : candidates) {
    try {
      const ckpt::Checkpoint c = ckpt::load_checkpoint(path);
      ckpt::require_resumable(c, path);
      if (c.position.finished) {
        spdlog::info("{}: {} finished every epoch ({}); starting a new run{}", why, dir, path,
                     damaged);
        return {};
      }
      spdlog::info("{}: continuing {} at epoch {} iteration {}{}", why, path, c.position.epoch + 1,
                   c.position.iter_in_epoch, damaged);
      return {dir, path};
    } catch (const Error& e) {
      damaged += fmt::format("; {} is unusable ({}), skipped", path, e.what());
    }
  }
  if (candidates.empty() && restarted) {
    spdlog::info(
        "{}: {} has no checkpoint yet (the previous attempt stopped before its first save); "
        "training from the start in it",
        why, dir);
    return {dir, ""};
  }
  if (candidates.empty()) {
    spdlog::info("{}: {} has no checkpoint to continue; starting a new run", why, dir);
    return {};
  }
  spdlog::warn("{}: no usable checkpoint in {}{}; starting a new run", why, dir, damaged);
  return {};
}

}  // namespace detrain::train
