// A detrain model from an Ultralytics .pt: the architecture the file records (its yaml_file,
// e.g. yolo11n-pose.yaml, is detrain's models/yolo11-pose.yaml at scale n), its class count
// and keypoint shape, and every tensor loaded strictly by name. A model.arch the user gave
// explicitly is built instead and must hold exactly the file's tensors.
#pragma once

#include <string>

#include "config/model_options.h"
#include "model/yolo_model.h"
#include "weights/ultralytics_pt.h"

namespace detrain::weights {

// "yolo11n (yolo11n.yaml, DetectionModel, 80 classes, EMA weights, Ultralytics 8.4.190)".
std::string describe(const UltralyticsModelFile& file);

// model.* for the file: `given` with arch and scale from the file unless `arch_given` (the
// user named model.arch), weights = the file. Throws ModelError when the file's architecture
// is not one detrain ships and none was given.
config::ModelOptions pt_model_options(const UltralyticsModelFile& file,
                                      const config::ModelOptions& given, bool arch_given);

// The width of the file's class towers (what its head's last class conv reads).
int64_t pt_cls_width(const UltralyticsModelFile& file);

// Builds `options` (from pt_model_options) at the file's nc and keypoint shape and loads
// every tensor. Throws ModelError naming the file and the architecture when they disagree.
model::YoloModel model_from_pt(const UltralyticsModelFile& file,
                               const config::ModelOptions& options);

}  // namespace detrain::weights
