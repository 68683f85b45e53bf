// Fixtures of the export tests: the four exported architectures, real coco-mini images as
// model input, the test-only Python environment (.venv-test with onnx and onnxruntime, made by
// scripts/setup.sh) and a round trip through onnxruntime via tests/export/ort_run.py.
#pragma once

#include <torch/torch.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/heads.h"
#include "test_support.h"

namespace detrain::test {

struct ExportCase {
  std::string name;     // "yolo26n-pose"
  std::string arch;     // "models/yolo26-pose.yaml"
  std::string dataset;  // "data/coco-mini-pose.yaml"
};

// yolo26n, yolo26n-pose, yolo11n, yolo11n-pose.
std::vector<ExportCase> export_cases();

// The python of DETRAIN_TEST_VENV or <source>/.venv-test when it imports onnx and onnxruntime;
// otherwise skips visibly (see test_support.h) and returns nullopt.
std::optional<std::string> onnx_python_or_skip();

// The first `count` coco-mini images (sorted by name) resized to imgsz x imgsz, RGB in 0..1:
// [count, 3, imgsz, imgsz] float32. Skips (nullopt) when coco-mini is absent.
std::optional<torch::Tensor> coco_images(int64_t count, int64_t imgsz);

// Runs a shell command; stdout and stderr together.
RunResult run_command(const std::string& command);

struct OrtOutputs {
  std::map<std::string, torch::Tensor> tensors;  // the first output, per input name
  std::map<std::string, std::string> metadata;   // metadata_props + input/output dims
};

// onnx.checker (full check) then onnxruntime on each named input batch; REQUIREs success.
// timed_runs > 0: metadata["latency_ms"] is the median CPU milliseconds per image over that
// many further runs.
OrtOutputs run_onnxruntime(const std::string& python, const std::string& onnx_path,
                           const std::map<std::string, torch::Tensor>& inputs, const TempDir& dir,
                           int timed_runs = 0);

// Largest absolute difference of two tensors of the same shape (REQUIREs equal shapes).
double max_abs_difference(const torch::Tensor& a, const torch::Tensor& b);

// How far onnxruntime's output is from LibTorch's EvalOutput of the same images: the largest
// absolute difference, and the largest scaled one, |a - b| / (1 + |b| / 100), which the tests
// hold to 1e-4: below 100 (scores, visibilities, small coordinates) that is the 1e-4
// absolute bar; pixel coordinates of hundreds carry fp32 rounding that grows with them (decoded
// boxes multiply DFL distances by strides up to 32; one float step at 256 px is 3e-5).
// NMS models: element by element. end2end models: every `detections` row must be a real
// (anchor, class) row of LibTorch's decoded tensor (box, that class's score, keypoints), so the
// largest over rows of the smallest difference over anchors; the order of rows whose scores tie
// to within float rounding is the runtime's own (random-init heads score every anchor alike).
struct OnnxDifference {
  double abs = 0;
  double scaled = 0;
};
OnnxDifference onnx_difference(const torch::Tensor& ort, const model::EvalOutput& libtorch,
                               int64_t nc, bool end2end);

}  // namespace detrain::test
