// `detrain export --format safetensors`: the model's weights (a checkpoint's EMA weights, as
// load_inference_model loads them) under the reference's state-dict names, BN statistics
// included, so `model.weights=` and the Python reference's load_state_dict read them back.
#pragma once

#include <string>

#include "model/yolo_model.h"

namespace detrain::exporter {

// Writes atomically; throws ModelError for a fused model (its names no longer match the
// reference's) and IoError when `path` cannot be written.
void export_safetensors(const model::YoloModelImpl& model, const std::string& path);

}  // namespace detrain::exporter
