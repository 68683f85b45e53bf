// The model `detrain val` and `detrain predict` run: from a detrain checkpoint (its EMA
// weights, as the trainer validates, else the raw model; its resolved config) or from a
// safetensors state dict with reference names (architecture from the given config), or from an
// Ultralytics .pt (architecture, classes and names from the file; weights/ultralytics_pt.h).
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "data/dataset.h"
#include "model/yolo_model.h"

namespace detrain::tasks {

struct InferenceModel {
  model::YoloModel model{nullptr};  // in eval mode, on the CPU
  config::ResolvedConfig config;    // the checkpoint's config (plus overrides), or `given`
  std::string source;               // the weights file
  std::vector<std::string> names;   // class names the weights file carries (.pt), else empty
};

// `weights`: a checkpoint, a safetensors file or a run directory (its best.ckpt, else
// last.ckpt). `given` is used for safetensors files and supplies nothing for checkpoints except the
// `overrides`, which are applied to the checkpoint's config (e.g. data.dataset=...). Errors:
// IoError for a missing file, ModelError for a file of another architecture or a corrupt one.
InferenceModel load_inference_model(const std::string& weights, const config::ResolvedConfig& given,
                                    const std::vector<std::string>& overrides);

// A data set whose names are placeholders (an Ultralytics data YAML with `nc` alone: class_0,
// class_1, ...) takes the weights file's names (`source`'s) when it carries as many.
void use_file_class_names(const std::vector<std::string>& file_names, const std::string& source,
                          data::DatasetInfo& dataset);
inline void use_file_class_names(const InferenceModel& model, data::DatasetInfo& dataset) {
  use_file_class_names(model.names, model.source, dataset);
}

// The resolved config a checkpoint was trained with, plus overrides.
config::ResolvedConfig checkpoint_config(const std::string& config_yaml, const std::string& source,
                                         const std::vector<std::string>& overrides);

}  // namespace detrain::tasks
