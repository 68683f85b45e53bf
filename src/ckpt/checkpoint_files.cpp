// Publishing and repairing checkpoint files; see checkpoint_files.h.
#include "ckpt/checkpoint_files.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "ckpt/best_checkpoint.h"
#include "common/atomic_file.h"
#include "common/errors.h"

namespace detrain::ckpt {

namespace fs = std::filesystem;

void publish_best(const report::RunPaths& paths, const Checkpoint& full, bool half) {
  save_checkpoint(paths.best_ckpt, shippable_checkpoint(full, half));
}

namespace {

// Why best.ckpt cannot be used, or "" when it loads and verifies.
std::string best_problem(const std::string& path) {
  if (!fs::exists(path)) return "missing";
  try {
    load_checkpoint(path);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace

void tidy_for_resume(const report::RunPaths& paths, const Checkpoint& last, bool half) {
  for (const auto& dir : {paths.dir, paths.weights_dir}) {
    if (const int n = remove_stale_temporaries(dir))
      spdlog::info("removed {} temporary file(s) of interrupted writes in {}", n, dir);
  }
  if (last.best_epoch < 0) return;  // no validated epoch yet: no best.ckpt is expected
  const std::string problem = best_problem(paths.best_ckpt);
  if (problem.empty()) return;
  // last.ckpt holds the state after epoch `position.epoch`; it is the best one when that epoch
  // was the best and it ended there.
  const bool exact = last.position.iter_in_epoch == 0 && last.best_epoch + 1 == last.position.epoch;
  publish_best(paths, last, half);
  if (exact)
    spdlog::warn("{} was damaged ({}); rewritten from {} (the same epoch {})", paths.best_ckpt,
                 problem, paths.last_ckpt, last.best_epoch + 1);
  else
    spdlog::warn(
        "{} was damaged ({}); replaced by the weights of {} (epoch {} iteration {}, not the "
        "best epoch {}); the next epoch that improves fitness rewrites it",
        paths.best_ckpt, problem, paths.last_ckpt, last.position.epoch + 1,
        last.position.iter_in_epoch, last.best_epoch + 1);
}

}  // namespace detrain::ckpt
