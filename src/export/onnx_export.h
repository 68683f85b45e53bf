// `detrain export --format onnx`: the fused inference model as an ONNX file. Input `images`
// [B, 3, H, W] float32 RGB in 0..1; output `detections` [B, k, 6 (+K*ndim)] for end2end models,
// else `predictions` [B, 4 + nc (+K*ndim), A] (boxes cx, cy, w, h in px, class scores,
// keypoints), exactly what forward_eval returns. Metadata properties carry what a runtime needs
// to read the outputs (names, strides, task, kpt_shape, imgsz, ...).
#pragma once

#include <string>
#include <vector>

#include "export/onnx_proto.h"
#include "model/yolo_model.h"

namespace detrain::exporter {

constexpr int64_t kMinOpset = 17;
constexpr int64_t kMaxOpset = 21;  // onnxruntime 1.20's newest

struct OnnxOptions {
  int64_t imgsz = 640;   // square input, a multiple of the model's largest stride
  int64_t batch = 1;     // fixed batch size (ignored when dynamic)
  bool dynamic = false;  // batch dimension named "batch"
  bool half = false;     // float16 weights and activations (input and outputs stay float32)
  int64_t opset = kMinOpset;
  int64_t max_det = 300;           // end2end rows per image (min with the anchor count)
  std::vector<std::string> names;  // class names by index (indices when empty)
};

// Checks the options against the model: usage errors (exit 2) name the flag and what to do.
void check_onnx_options(const model::YoloModelImpl& model, const OnnxOptions& options);

// The graph of `model`, which must be fused (YoloModelImpl::fuse).
OnnxModel build_onnx(model::YoloModelImpl& model, const OnnxOptions& options);

// Fuses `model` in place, builds the graph and writes it atomically to `path` (IoError when the
// path cannot be written; nothing is left behind).
void export_onnx(model::YoloModelImpl& model, const OnnxOptions& options, const std::string& path);

}  // namespace detrain::exporter
