// See initial_weights.h.
#include "train/initial_weights.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "common/errors.h"
#include "model/state_dict.h"
#include "train/run_dir.h"

namespace detrain::train {

namespace fs = std::filesystem;

std::string initial_weights_file(const std::string& weights) {
  std::error_code ec;
  if (fs::is_directory(weights, ec)) {
    const RunPaths p = run_paths(weights);
    if (fs::exists(p.best_ckpt)) return p.best_ckpt;
    if (fs::exists(p.last_ckpt)) return p.last_ckpt;
    throw IoError("model.weights=" + weights + " is a directory without weights/best.ckpt or " +
                  "weights/last.ckpt; name a run directory (runs/<name>) or a weights file");
  }
  if (!fs::exists(weights, ec))
    throw IoError("model.weights=" + weights +
                  " does not exist; name a checkpoint (runs/<name>/weights/last.ckpt), a run "
                  "directory or a safetensors file");
  return weights;
}

InitialWeightsReport load_initial_weights(model::YoloModelImpl& model, const ArchIdentity& identity,
                                          const std::string& weights) {
  InitialWeightsReport report;
  report.path = initial_weights_file(weights);
  if (fs::path(report.path).extension() == ".safetensors") {
    model::load_weights(model, report.path);
    report.loaded = model::state_dict(model).size();
    spdlog::info("model.weights: {} tensors from {}", report.loaded, report.path);
    return report;
  }
  report.from_checkpoint = true;
  const Checkpoint c = load_checkpoint(report.path);
  const ArchIdentity& saved = c.arch;
  const bool same_network = saved.arch_hash == identity.arch_hash &&
                            saved.scale == identity.scale && saved.kpt_shape == identity.kpt_shape;
  if (!same_network)
    throw ModelError("model.weights=" + report.path + " was trained for " + saved.describe() +
                     ", not for " + identity.describe() +
                     "; use weights of this architecture or set model.arch/model.scale to match");
  const NamedTensors& state = c.ema.empty() ? c.model : c.ema;
  std::map<std::string, torch::Tensor> tensors(state.begin(), state.end());
  if (saved.nc == identity.nc) {
    model::load_state_dict(model, tensors, report.path);
    report.loaded = tensors.size();
  } else {
    // Only the class heads' last layers depend on nc: every other tensor keeps its shape.
    torch::NoGradGuard no_grad;
    for (auto [name, target] : model::state_dict(model)) {
      const auto it = tensors.find(name);
      if (it != tensors.end() && it->second.sizes() == target.sizes()) {
        target.copy_(it->second.to(target.device(), target.scalar_type()));
        ++report.loaded;
      } else {
        ++report.fresh;
      }
    }
    spdlog::warn(
        "model.weights: {} was trained for {} classes, this run has {}: loaded {} tensors, the "
        "class heads ({} tensors) start from their initialisation",
        report.path, saved.nc, identity.nc, report.loaded, report.fresh);
    return report;
  }
  spdlog::info("model.weights: {} weights of {} ({} tensors)", c.ema.empty() ? "raw model" : "EMA",
               report.path, report.loaded);
  return report;
}

void require_resumable(const Checkpoint& checkpoint, const std::string& path) {
  if (checkpoint.model.empty())
    throw ConfigError(path +
                      " holds the shipped weights only (no optimizer or raw model); resume from "
                      "the run's weights/last.ckpt, or start a new run with model.weights=" +
                      path);
}

}  // namespace detrain::train
