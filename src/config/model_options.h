// `model.*`: which network to build. Owned by the model zoo (src/model/).
#pragma once

#include "config/field.h"

namespace detrain::config {

// The most classes a model may have (model.nc, a YAML's nc, a head's nc argument).
constexpr int64_t kMaxClasses = 100000;

// The coarsest total stride the model builder accepts. Row strides are 1, 2, 4 or 8 and upsample
// factors must divide the stride, so every network's strides are powers of two up to this one:
// data.imgsz is checked against it when the config resolves, before any architecture is read,
// and then fits every model.
constexpr int64_t kMaxStride = 32;

struct ModelOptions {
  std::string arch = "models/yolo26.yaml";
  std::string scale = "n";
  int64_t nc = 0;
  std::string weights;
  int64_t cls_width = 0;

  template <class V>
  void visit(V& v) {
    v("arch", arch, "architecture YAML (models/yolo26.yaml, models/yolo26-pose.yaml, ...)");
    v("scale", scale,
      "model scale from the YAML's scales table (a scale in the arch name, yolo26s, wins)",
      Constraint::one_of({"n", "s", "m", "l", "x"}));
    v("nc", nc, "number of classes; 0 takes it from the data set",
      Constraint::range(0, kMaxClasses));
    v("weights", weights,
      "initial weights: an Ultralytics .pt (architecture and class names from the file), a "
      "detrain checkpoint or run directory, or a safetensors state dict; empty: random init");
    v("cls_width", cls_width,
      "width of the head's class towers; 0: the reference's rule max(P3 width, min(nc, 100)). "
      "Fine-tuning a .pt to another class count keeps the file's width, as Ultralytics does",
      Constraint::range(0, 4096));
  }
};

}  // namespace detrain::config
