// See inference_model.h.
#include "tasks/inference_model.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ckpt/checkpoint.h"
#include "ckpt/initial_weights.h"
#include "common/errors.h"
#include "data/dataset.h"
#include "data/ultralytics_data_yaml.h"
#include "model/safetensors.h"
#include "model/state_dict.h"
#include "weights/ultralytics_model.h"

namespace detrain::tasks {

namespace fs = std::filesystem;

config::ResolvedConfig checkpoint_config(const std::string& config_yaml, const std::string& source,
                                         const std::vector<std::string>& overrides) {
  // config::resolve reads files: the text goes through a private temporary file.
  const fs::path tmp =
      fs::temp_directory_path() / ("detrain-ckpt-config-" + std::to_string(::getpid()) + ".yaml");
  {
    std::ofstream out(tmp);
    out << config_yaml;
    if (!out) throw IoError("cannot write a temporary file in " + tmp.parent_path().string());
  }
  try {
    config::ResolvedConfig r = config::resolve(tmp.string(), overrides);
    fs::remove(tmp);
    return r;
  } catch (const ConfigError& e) {
    fs::remove(tmp);
    throw ConfigError(source + ": its saved configuration does not resolve: " + e.what());
  }
}

InferenceModel load_inference_model(const std::string& weights_or_run,
                                    const config::ResolvedConfig& given,
                                    const std::vector<std::string>& overrides) {
  // A run directory stands for its weights/best.ckpt (else last.ckpt), as in model.weights.
  const std::string weights = fs::is_directory(weights_or_run)
                                  ? ckpt::initial_weights_file(weights_or_run)
                                  : weights_or_run;
  if (!fs::exists(weights))
    throw IoError(weights +
                  " does not exist; pass an Ultralytics .pt, a checkpoint "
                  "(runs/<name>/weights/best.ckpt) or a safetensors state dict");
  InferenceModel r;
  r.source = weights;
  if (weights::is_ultralytics_pt(weights)) {
    const weights::UltralyticsModelFile file = weights::read_ultralytics_pt(weights);
    r.config = given;
    config::apply_overrides(r.config, overrides);
    const bool arch_given = r.config.origin["model.arch"] != "default";
    const config::ModelOptions options =
        weights::pt_model_options(file, r.config.experiment.model, arch_given);
    config::apply_overrides(r.config, {"model.arch=" + options.arch, "model.scale=" + options.scale,
                                       "model.weights=" + weights});
    r.model = weights::model_from_pt(file, r.config.experiment.model);
    if (!file.placeholder_names) r.names = file.names;
  } else if (fs::path(weights).extension() == ".safetensors") {
    r.config = given;
    config::apply_overrides(r.config, overrides);
    config::ModelOptions options = r.config.experiment.model;
    options.weights = weights;
    // nc as for a .pt: the file's class conv, else the names of a data set given (-d), else the
    // YAML's; model.nc given explicitly wins.
    int64_t nc = 0;
    if (options.nc == 0) {
      nc = weights::head_class_count(model::read_safetensors(weights).tensors);
      if (nc == 0 && r.config.origin["data.dataset"] != "default")
        nc = data::load_dataset(r.config.experiment.data.dataset, r.config.experiment.data.root)
                 .nc();
    }
    r.model = model::make_model(options, nc);
  } else {
    const ckpt::Checkpoint c = ckpt::load_checkpoint(weights);
    r.config = checkpoint_config(c.config_yaml, weights, overrides);
    config::ModelOptions options = r.config.experiment.model;
    options.weights.clear();
    options.nc = c.arch.nc;
    std::optional<std::array<int64_t, 2>> kpt;
    if (c.arch.kpt_shape.size() == 2)
      kpt = std::array<int64_t, 2>{c.arch.kpt_shape[0], c.arch.kpt_shape[1]};
    r.model = model::make_model(options, c.arch.nc, kpt);
    const ckpt::NamedTensors& state = c.ema.empty() ? c.model : c.ema;
    model::load_state_dict(
        *r.model, std::map<std::string, torch::Tensor>(state.begin(), state.end()), weights);
  }
  r.model->eval();
  return r;
}

void use_file_class_names(const std::vector<std::string>& file_names, const std::string& source,
                          data::DatasetInfo& dataset) {
  if (file_names.size() != dataset.names.size() || !data::placeholder_class_names(dataset.names))
    return;
  spdlog::info("{} names no classes ({} of class_N); using {}'s names", dataset.yaml_path,
               dataset.names.size(), source);
  dataset.names = file_names;
}

}  // namespace detrain::tasks
