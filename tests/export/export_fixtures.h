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

// One epoch of `c` on its coco-mini set at 64 px (weights and BN statistics that are no longer
// the init); the run goes under `dir`. Returns its last.ckpt.
std::string short_trained_checkpoint(const ExportCase& c, const TempDir& dir);

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

// The bar for fp32 exports: onnxruntime's outputs equal LibTorch's within 1e-4 absolute, boxes
// and keypoints in pixels included. The graph computes LibTorch's sequence of ops (decoding
// included: the DFL is written as elementwise ops and in-order sums on both sides, see
// model/layers.h), so what is left are the kernels' own roundings: convolutions that sum in
// another order (onnxruntime's MLAS vs oneDNN / GEMM) and Sigmoid / Exp approximations, a float
// step or two each, which decoding multiplies by the stride (up to 32). At the tests' 256 px a
// coordinate below 512 has float steps of 3e-5: measured up to 2 steps (6e-5) on the four
// architectures, random init and short-trained.
constexpr double kOnnxTolerance = 1e-4;

// How far onnxruntime's output is from LibTorch's EvalOutput of the same images: the largest
// absolute difference. NMS models: element by element. end2end models: every `detections` row
// must be a real (anchor, class) row of LibTorch's decoded tensor (box, that class's score,
// keypoints), so the largest over rows of the smallest difference over anchors; the order of
// rows whose scores tie to within float rounding is the runtime's own (random-init heads score
// every anchor alike). Also CHECKs that the top-k scores are LibTorch's, in descending order.
double onnx_difference(const torch::Tensor& ort, const model::EvalOutput& libtorch, int64_t nc,
                       bool end2end);

// The bar for float16 exports (--half). fp16 keeps 11 significant bits: each rounding is off by
// at most u = 2^-11 = 4.9e-4 relative, and the activations go through ~60 fp16 layers before
// decoding (in fp32). So the errors are held to 16u relative, on the class logits (the scores'
// sigmoid hides their error near 0 and 1) and on the box coordinates (relative to at least
// 8 px: a coordinate near 0 carries the error of the anchor and distance it is the difference
// of). Measured on yolo11n at 256 px: short-trained logits 3.9u, boxes 3.2u; random init far
// less (its near-uniform DFL bins make boxes insensitive).
constexpr double kHalfToleranceU = 16;
struct HalfError {
  double boxes_u = 0;   // largest box error, in u
  double logits_u = 0;  // largest class-logit error, in u
};
// An NMS model's fp16 `predictions` against LibTorch's fp32 decoded tensor [B, 4 + nc, A].
HalfError half_error(const torch::Tensor& ort, const torch::Tensor& decoded, int64_t nc);

}  // namespace detrain::test
