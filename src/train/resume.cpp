// See resume.h.
#include "train/resume.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <filesystem>

#include "ckpt/initial_weights.h"
#include "common/errors.h"
#include "report/run_dir.h"
#include "tasks/inference_model.h"
#include "train/train_state.h"

namespace detrain::train {

config::ResolvedConfig resume_config(const std::string& where,
                                     const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (!std::filesystem::exists(where, ec))
    throw IoError("--resume " + where +
                  ": no such run directory or checkpoint (give runs/<name> or "
                  "runs/<name>/weights/last.ckpt)");
  const std::string path = report::resume_checkpoint(where);
  const ckpt::Checkpoint c = ckpt::load_checkpoint(path);
  ckpt::require_resumable(c, path);
  const std::string args_yaml = report::run_paths(report::resume_run_dir(where)).args_yaml;
  if (std::filesystem::is_regular_file(args_yaml, ec)) return config::resolve(args_yaml, overrides);
  spdlog::info("{} has no args.yaml beside it; resuming with the checkpoint's own configuration",
               path);
  return tasks::checkpoint_config(c.config_yaml, path, overrides);
}

ckpt::Checkpoint load_resume_checkpoint(const std::string& path,
                                        const ResumeExpectation& expected) {
  const config::ResolvedConfig& resolved = *expected.resolved;
  ckpt::Checkpoint c = ckpt::load_checkpoint(path);
  ckpt::require_resumable(c, path);
  ckpt::check_architecture(c, expected.arch, path);
  if (c.position.finished)
    throw ConfigError(path +
                      ": this run already finished every epoch; nothing to resume "
                      "(train longer in a new run from its weights: model.weights=" +
                      path + " train.epochs=N)");
  if (c.config_hash != resolved.hash) {
    const config::ResolvedConfig saved = tasks::checkpoint_config(c.config_yaml, path, {});
    const auto all_changes = config::diff(saved.experiment, resolved.experiment);
    // How a run is continued or stopped changes nothing it computes: a job first started
    // plainly and then resumed with train.resume=auto is the same run.
    std::vector<std::string> changes;
    for (const auto& line : all_changes)
      if (line.rfind("train.resume:", 0) != 0 && line.rfind("train.requeue_signal:", 0) != 0)
        changes.push_back(line);
    std::string listed;
    for (const auto& line : changes) listed += "\n  " + line;
    // The same values under another hash: the checkpoint predates keys added since (at their
    // defaults now), which change nothing it did.
    if (all_changes.empty()) {
      spdlog::info(
          "{} was written before keys were added to the configuration; its values are "
          "this run's",
          path);
    } else if (!changes.empty()) {
      if (!expected.force)
        throw ConfigError(path + ": the configuration differs from the checkpoint's (hash " +
                          c.config_hash + " vs " + resolved.hash +
                          "); resume with the same config, or pass --force to accept:" + listed);
      spdlog::warn("resuming with a different configuration (--force):{}", listed);
    }
  }
  if (c.position.batches_per_epoch != expected.batches_per_epoch)
    throw ConfigError(
        path + ": the checkpoint has " + std::to_string(c.position.batches_per_epoch) +
        " batches per epoch but this data set and batch give " +
        std::to_string(expected.batches_per_epoch) + "; resume with the same data and data.batch");
  // Another world size continues the same global batches (data.batch is global and the
  // loader's order does not depend on the rank count): each rank takes its new share from
  // where the run stopped, and the pending accumulated gradients are already the ranks' mean.
  const int64_t saved_world = state_of(c).world_size;
  if (saved_world != expected.world_size) {
    const int64_t batch = resolved.experiment.data.batch;
    spdlog::warn(
        "{}: written by {} rank(s), continued by {}: each rank now takes {} of the same {}-image "
        "global batches (was {}), from epoch {} iteration {}; an uninterrupted run's results "
        "are not reproduced bit for bit (the sums run in another order)",
        path, saved_world, expected.world_size, batch / expected.world_size, batch,
        batch / saved_world, c.position.epoch + 1, c.position.iter_in_epoch);
  }
  return c;
}

ckpt::Checkpoint resume_into(TrainParts& parts, TrainState& state, const std::string& where,
                             const ResumeExpectation& expected) {
  const std::string path = report::resume_checkpoint(where);
  ckpt::Checkpoint c = load_resume_checkpoint(path, expected);
  restore_parts(parts, c, path);
  state = state_of(c);
  spdlog::info("resumed {} at epoch {} iteration {} ({} optimizer steps)", path,
               state.position.epoch + 1, state.position.iter_in_epoch,
               state.position.optimizer_steps);
  return c;
}

}  // namespace detrain::train
