// See initial_weights.h.
#include "ckpt/initial_weights.h"

#include <spdlog/spdlog.h>

#include <cctype>
#include <filesystem>
#include <regex>
#include <set>

#include "common/errors.h"
#include "common/strings.h"
#include "model/safetensors.h"
#include "model/state_dict.h"
#include "report/run_dir.h"
#include "weights/ultralytics_model.h"

namespace detrain::ckpt {

namespace fs = std::filesystem;

std::string initial_weights_file(const std::string& weights) {
  std::error_code ec;
  if (fs::is_directory(weights, ec)) {
    const report::RunPaths p = report::run_paths(weights);
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

namespace {

// "yolo11n weights (80 classes)" from an exported file's metadata, else its tensor count.
std::string describe_file(const model::SafetensorsFile& file) {
  const auto arch = file.metadata.find("arch");
  const auto nc = file.metadata.find("nc");
  std::string s = arch != file.metadata.end() ? arch->second + " weights" : "weights";
  if (nc != file.metadata.end()) s += " (" + nc->second + " classes)";
  return s + ", " + std::to_string(file.tensors.size()) + " tensors";
}

// The file's class count as its class-output convs tell (their first dimension where the
// model's is its nc), else its metadata's, else "another number of".
std::string file_classes(const model::SafetensorsFile& file, const std::set<int64_t>& from_shapes) {
  if (from_shapes.size() == 1) return std::to_string(*from_shapes.begin());
  const auto nc = file.metadata.find("nc");
  return nc != file.metadata.end() ? nc->second : "another number of";
}

// Copies each tensor of `tensors` that the model has under the same name and shape; counts the
// others as fresh.
void copy_matching(model::YoloModelImpl& model, const std::map<std::string, torch::Tensor>& tensors,
                   InitialWeightsReport& report) {
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
}

void say_partial(const InitialWeightsReport& report, const std::string& classes_there,
                 int64_t classes_here) {
  spdlog::warn(
      "model.weights: {} is for {} classes, this run has {}: transferred {}/{} tensors, "
      "skipped {} class-head tensors (they start from their initialisation)",
      report.path, classes_there, classes_here, report.loaded, report.loaded + report.fresh,
      report.fresh);
}

// A safetensors state dict with reference names: every tensor, or for another class count
// every tensor but the class branch's that changed shape (the reference's intersect_dicts: the
// head's cv3 / one2one_cv3 towers, whose width follows nc up to 100); anything else is
// another architecture.
InitialWeightsReport load_safetensors_weights(model::YoloModelImpl& model,
                                              const ArchIdentity& identity,
                                              InitialWeightsReport report) {
  const model::SafetensorsFile file = model::read_safetensors(report.path);
  const std::string head = "model." + std::to_string(model.rows().size() - 1) + ".";
  auto class_branch = [&](const std::string& name) {
    return name.rfind(head, 0) == 0 && (name.find(".cv3.") != std::string::npos ||
                                        name.find(".one2one_cv3.") != std::string::npos);
  };
  const auto state = model::state_dict(model);
  std::vector<std::string> other_shape;
  std::set<int64_t> file_nc;  // dim 0 of the class-output convs, where the model's is its nc
  size_t missing = 0, class_shapes = 0;
  for (const auto& [name, target] : state) {
    const auto it = file.tensors.find(name);
    if (it == file.tensors.end()) {
      ++missing;
    } else if (it->second.sizes() != target.sizes()) {
      if (!class_branch(name)) {
        other_shape.push_back(name);
        continue;
      }
      ++class_shapes;
      const auto& f = it->second;
      if (f.dim() == target.dim() && f.dim() > 0 && target.size(0) == identity.nc &&
          f.sizes().slice(1) == target.sizes().slice(1))
        file_nc.insert(f.size(0));
    }
  }
  const size_t unexpected = file.tensors.size() + missing - state.size();
  const bool same_names = missing == 0 && unexpected == 0;
  if (same_names && other_shape.empty() && class_shapes == 0) {
    model::load_state_dict(model, file.tensors, report.path);
    report.loaded = state.size();
    spdlog::info("model.weights: {} tensors from {}", report.loaded, report.path);
    return report;
  }
  if (same_names && other_shape.empty() && !file_nc.empty()) {
    copy_matching(model, file.tensors, report);
    say_partial(report, file_classes(file, file_nc), identity.nc);
    return report;
  }
  std::string why = std::to_string(missing) + " of this model's tensors missing, " +
                    std::to_string(unexpected) + " unknown to it";
  if (!other_shape.empty()) why += ", " + other_shape.front() + " of another shape";
  throw ModelError("model.weights=" + report.path + " (" + describe_file(file) + ") is not for " +
                   identity.describe() + ": " + why +
                   "; use weights of this architecture or set model.arch/model.scale to match");
}

std::string normalised_name(const std::string& s) {
  std::string out = trim(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool placeholder_names(const std::vector<std::string>& names) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] != std::to_string(i)) return false;
  return true;  // also an empty list: nothing to match on
}

// 8.4.190's _remap_cls_by_names: the class convs' rows (weight and bias of each cv3 /
// one2one_cv3 tower's last conv, whose first dimension is this model's nc) copied from the
// file's row of the same class name; the tensors so copied leave `tensors`, so the name-and-
// shape copy after it does not overwrite them in the file's order.
size_t remap_class_rows(model::YoloModelImpl& model, std::map<std::string, torch::Tensor>& tensors,
                        const std::vector<std::string>& file_names,
                        const std::vector<std::string>& names) {
  if (placeholder_names(file_names) || placeholder_names(names)) return 0;
  std::map<std::string, int64_t> file_index;
  for (size_t i = 0; i < file_names.size(); ++i)
    file_index.emplace(normalised_name(file_names[i]), static_cast<int64_t>(i));
  std::vector<int64_t> dst, src;
  bool identity = file_names.size() == names.size();
  for (size_t k = 0; k < names.size(); ++k) {
    const auto it = file_index.find(normalised_name(names[k]));
    const int64_t from = it == file_index.end() ? -1 : it->second;
    identity = identity && from == static_cast<int64_t>(k);
    if (from >= 0) {
      dst.push_back(static_cast<int64_t>(k));
      src.push_back(from);
    }
  }
  if (dst.empty() || identity) return 0;
  const std::string head = "model." + std::to_string(model.rows().size() - 1) + ".";
  const int64_t nc = static_cast<int64_t>(names.size());
  const torch::Tensor dst_rows = torch::tensor(dst, torch::kLong);
  const torch::Tensor src_rows = torch::tensor(src, torch::kLong);
  torch::NoGradGuard no_grad;
  size_t remapped = 0;
  // A tower's plain last conv ("cv3.0.2.weight"); its hidden Conv blocks end in .conv/.bn and
  // may have nc outputs too (a class width of 80 for 80 classes), so the name decides.
  const std::regex class_conv(R"(\.(one2one_)?cv3\.\d+\.\d+\.(weight|bias)$)");
  for (auto [name, target] : model::state_dict(model)) {
    if (name.rfind(head, 0) != 0 || !std::regex_search(name, class_conv)) continue;
    if (target.dim() == 0 || target.size(0) != nc) continue;
    const auto it = tensors.find(name);
    if (it == tensors.end() || it->second.sizes().slice(1) != target.sizes().slice(1)) continue;
    target.index_copy_(
        0, dst_rows,
        it->second.index_select(0, src_rows).to(target.device(), target.scalar_type()));
    tensors.erase(it);
    ++remapped;
  }
  if (remapped)
    spdlog::info("model.weights: remapped {}/{} class rows from the file by class name", dst.size(),
                 nc);
  return remapped;
}

// An Ultralytics .pt: its tensors by name and shape (intersect_dicts) after the remap by name.
InitialWeightsReport load_pt_weights(model::YoloModelImpl& model,
                                     const std::vector<std::string>& names,
                                     InitialWeightsReport report) {
  const weights::UltralyticsModelFile file = weights::read_ultralytics_pt(report.path);
  std::map<std::string, torch::Tensor> tensors = weights::state_map(file);
  report.remapped = remap_class_rows(model, tensors, file.names, names);
  copy_matching(model, tensors, report);
  report.loaded += report.remapped;
  report.fresh -= std::min(report.fresh, report.remapped);
  const size_t total = report.loaded + report.fresh;
  if (report.loaded * 2 < total)
    throw ModelError("model.weights=" + report.path + " holds " + weights::describe(file) +
                     ", which shares only " + std::to_string(report.loaded) + " of " +
                     std::to_string(total) + " tensors with " + model.arch().name() +
                     "; set model.arch to the file's architecture (or leave it unset)");
  spdlog::info("model.weights: transferred {}/{} items from {} ({})", report.loaded, total,
               report.path, weights::describe(file));
  return report;
}

}  // namespace

InitialWeightsReport load_initial_weights(model::YoloModelImpl& model, const ArchIdentity& identity,
                                          const std::string& weights,
                                          const std::vector<std::string>& names) {
  InitialWeightsReport report;
  report.path = initial_weights_file(weights);
  if (weights::is_ultralytics_pt(report.path)) return load_pt_weights(model, names, report);
  if (fs::path(report.path).extension() == ".safetensors")
    return load_safetensors_weights(model, identity, report);
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
  if (saved.nc != identity.nc) {
    // Only the class heads' last layers depend on nc: every other tensor keeps its shape.
    copy_matching(model, tensors, report);
    say_partial(report, std::to_string(saved.nc), identity.nc);
    return report;
  }
  model::load_state_dict(model, tensors, report.path);
  report.loaded = tensors.size();
  spdlog::info("model.weights: {} weights of {} ({} tensors)", c.ema.empty() ? "raw model" : "EMA",
               report.path, report.loaded);
  return report;
}

void adopt_pt_architecture(config::ResolvedConfig& resolved) {
  const std::string& path = resolved.experiment.model.weights;
  if (path.empty() || !weights::is_ultralytics_pt(path)) return;
  const weights::UltralyticsModelFile file = weights::read_ultralytics_pt(path);
  const bool arch_given = resolved.origin["model.arch"] != "default";
  const config::ModelOptions o =
      weights::pt_model_options(file, resolved.experiment.model, arch_given);
  // A given architecture must be the file's network (every tensor by name and shape at the
  // file's class count), not merely share some layers with it.
  if (arch_given) weights::model_from_pt(file, o);
  std::vector<std::string> adopted{"model.arch=" + o.arch, "model.scale=" + o.scale};
  if (!arch_given && resolved.experiment.model.cls_width == 0)
    adopted.push_back("model.cls_width=" + std::to_string(weights::pt_cls_width(file)));
  config::apply_overrides(resolved, adopted);
  spdlog::info("model.weights: {} holds {}", path, weights::describe(file));
}

void require_resumable(const Checkpoint& checkpoint, const std::string& path) {
  if (checkpoint.model.empty())
    throw ModelError(path +
                     " holds the shipped weights only (no optimizer or raw model); resume from "
                     "the run's weights/last.ckpt, or start a new run with model.weights=" +
                     path);
}

}  // namespace detrain::ckpt
