// Fixtures of the export tests: the four exported architectures, real coco-mini images as
// model input, the test-only Python environment (.venv-test with onnx and onnxruntime, made by
// scripts/setup.sh) and a round trip through onnxruntime via tests/export/ort_run.py.
#pragma once

#include <torch/torch.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/builder.h"
#include "model/heads.h"
#include "model/yolo_model.h"
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

// `c` at scale n with weights whose outputs depend on the input: convolutions drawn He-normal
// (seeded), BatchNorm statistics set from one training-mode pass over `images` (so every layer's
// activations are of unit scale), head biases zero, in eval mode. The default init and a short
// training at 64 px both leave heads so flat (near-uniform DFL bins, scores near the prior) that
// the outputs barely depend on the input, which no parity bar could catch a wrong operator on.
model::YoloModel responsive_model(const ExportCase& c, const torch::Tensor& images);

// The python of DETRAIN_TEST_VENV or <source>/.venv-test when it imports onnx and onnxruntime;
// otherwise skips visibly (see test_support.h) and returns nullopt.
std::optional<std::string> onnx_python_or_skip();

// The first `count` coco-mini images (sorted by name) resized to imgsz x imgsz, RGB in 0..1:
// [count, 3, imgsz, imgsz] float32. Skips (nullopt) when coco-mini is absent.
std::optional<torch::Tensor> coco_images(int64_t count, int64_t imgsz);

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

// How far onnxruntime's output is from LibTorch's EvalOutput of the same images, in float32
// ulps of the output's scale: a pixel coordinate (boxes, keypoint x and y) differs by
// |diff| / ulp(imgsz), a probability (class scores, keypoint visibility) by |diff| / ulp(1);
// the worst element. ulp(s) is the spacing of float32 numbers at s (2^-15 at 256..511).
// NMS models: element by element. end2end models: every `detections` row must be a real
// (anchor, class) row of LibTorch's decoded tensor (box, that class's score, keypoints), so the
// largest over rows of the smallest difference over anchors; the order of rows whose scores tie
// to within float rounding is the runtime's own (random-init heads score every anchor alike).
// Also CHECKs that the rows come in descending order of score.
struct OnnxError {
  double ulps = 0;    // the worst element, in ulps of its channel's scale
  std::string where;  // which channel kind the worst element is: "coordinate" or "probability"
};
OnnxError onnx_difference(const torch::Tensor& ort, const model::EvalOutput& libtorch,
                          const model::ArchInfo& arch, int64_t imgsz);

// The bar for fp32 exports, in ulps of the output's scale (see onnx_difference). The graph
// computes LibTorch's sequence of ops (decoding included: the DFL is written as elementwise ops
// and in-order sums on both sides, see model/layers.h), so what is left are the kernels' own
// roundings: convolutions that sum in another order (onnxruntime's MLAS vs oneDNN / ATen, each
// choosing by CPU and thread count) and Sigmoid / Exp approximations, an ulp or so per layer,
// which the network amplifies as much as it amplifies any change of its input. Measured at
// 256 px: 0.25-4 ulps on the four architectures at the default init and short-trained (flat
// heads; AMD EPYC Zen 3: 4 ulps = 1.22e-4 px on yolo11n, Intel Xeon AVX-512/AMX 5 ulps), and
// 74-436 ulps with weights whose outputs follow their input (responsive_model, the worst case
// tried; one ulp of noise on every weight: 89-522). 2048 ulps (0.0625 px at 256 px, 2.4e-4 of a
// probability) is 4x that worst case; one dropped SiLU is 17,800 to 3e7 ulps off
// (tests/export/test_onnx_tolerance.cpp checks both sides).
constexpr double kOnnxToleranceUlps = 2048;

// onnx_difference of a deliberately changed copy of `onnx_path` (tests/export/perturb_onnx.py
// MODE: "ulp" or "drop-silu") run on `images` in onnxruntime, against `expected`.
double perturbed_ulps(const std::string& python, const std::string& onnx_path,
                      const std::string& mode, const torch::Tensor& images,
                      const model::EvalOutput& expected, const model::ArchInfo& arch, int64_t imgsz,
                      const TempDir& dir);

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
