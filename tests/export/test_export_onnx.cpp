// ONNX export checked by runtimes nobody here wrote: onnx.checker accepts the file and
// onnxruntime's outputs on real coco-mini images equal LibTorch's inference outputs, for the
// four architectures, at batch 1 and 3 through one dynamic-batch file; metadata says what the
// outputs are. Skips visibly without .venv-test (scripts/setup.sh) or coco-mini.
#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>

#include "config/config.h"
#include "export/export_fixtures.h"
#include "export/onnx_export.h"
#include "model/yolo_model.h"
#include "tasks/inference_model.h"

using namespace detrain;
using namespace detrain::test;

namespace {

constexpr int64_t kImgsz = 256;  // small for test time; 640 is measured for the README

model::YoloModel random_model(const ExportCase& c) {
  torch::manual_seed(7);
  config::ModelOptions options;
  options.arch = c.arch;
  options.scale = "n";
  auto m = model::make_model(options);
  m->eval();
  return m;
}

model::EvalOutput libtorch_output(model::YoloModelImpl& m, const torch::Tensor& images) {
  torch::NoGradGuard no_grad;
  return m.forward_eval(images, 300);
}

double difference(const torch::Tensor& ort, const model::EvalOutput& ref,
                  const model::YoloModelImpl& m, int64_t imgsz = kImgsz) {
  return onnx_difference(ort, ref, m.arch(), imgsz).ulps;
}

}  // namespace

TEST_CASE("ONNX export of each architecture matches LibTorch in onnxruntime", "[export]") {
  const auto python = onnx_python_or_skip();
  if (!python) return;
  const auto images = coco_images(3, kImgsz);
  if (!images) return;
  for (const auto& c : export_cases()) {
    INFO(c.name);
    TempDir dir("export-onnx");
    auto m = random_model(c);
    const auto expected1 = libtorch_output(*m, images->slice(0, 0, 1));
    const auto expected3 = libtorch_output(*m, *images);
    exporter::OnnxOptions o;
    o.imgsz = kImgsz;
    o.dynamic = true;
    for (int64_t i = 0; i < m->arch().nc; ++i) o.names.push_back("class" + std::to_string(i));
    const std::string path = dir.file(c.name + ".onnx");
    exporter::export_onnx(*m, o, path);
    const auto ort = run_onnxruntime(
        *python, path, {{"b1", images->slice(0, 0, 1).contiguous()}, {"b3", *images}}, dir);
    const auto d1 = difference(ort.tensors.at("b1"), expected1, *m);
    const auto d3 = difference(ort.tensors.at("b3"), expected3, *m);
    std::cout << c.name << ": onnxruntime vs LibTorch, ulps of the output's scale: batch 1 " << d1
              << ", batch 3 " << d3 << "\n";
    CHECK(d1 <= kOnnxToleranceUlps);
    CHECK(d3 <= kOnnxToleranceUlps);

    const auto& meta = ort.metadata;
    const bool pose = c.name.find("pose") != std::string::npos;
    CHECK(meta.at("task") == (pose ? "pose" : "detect"));
    CHECK(nlohmann::json::parse(meta.at("strides")) == nlohmann::json({8, 16, 32}));
    CHECK(nlohmann::json::parse(meta.at("imgsz")) == nlohmann::json({kImgsz, kImgsz}));
    // Python literals, as Ultralytics writes them (its AutoBackend ast.literal_evals them; the
    // Ultralytics tests, test_export_ultralytics.cpp, load these files through it).
    const std::string last = std::to_string(m->arch().nc - 1);
    CHECK(meta.at("names").rfind("{0: 'class0', 1: 'class1', ", 0) == 0);
    CHECK(meta.at("names").find(", " + last + ": 'class" + last + "'}") != std::string::npos);
    CHECK(meta.at("stride") == "32");
    CHECK(meta.at("end2end") == (m->arch().end2end ? "True" : "False"));
    CHECK(meta.at("args").find("'dynamic': True") != std::string::npos);
    if (pose) CHECK(nlohmann::json::parse(meta.at("kpt_shape")) == nlohmann::json({17, 3}));
    CHECK(meta.count("kpt_shape") == (pose ? 1u : 0u));
    CHECK(meta.at("output_name") == (m->arch().end2end ? "detections" : "predictions"));
    auto dims = nlohmann::json::parse(meta.at("output_dims"));
    CHECK(dims.at(0) == "batch");
    CHECK(nlohmann::json::parse(meta.at("input_dims")) ==
          nlohmann::json({"batch", 3, kImgsz, kImgsz}));
  }
}

TEST_CASE("ONNX export with a fixed batch and the newest opset runs in onnxruntime", "[export]") {
  const auto python = onnx_python_or_skip();
  if (!python) return;
  const auto images = coco_images(2, kImgsz);
  if (!images) return;
  // ReduceMax takes its axes as an input from opset 18 on: top-k (yolo26n) and DFL (yolo11n).
  for (const auto& c : {export_cases().at(0), export_cases().at(2)}) {
    INFO(c.name);
    TempDir dir("export-onnx-opts");
    auto m = random_model(c);
    const auto expected = libtorch_output(*m, *images);
    exporter::OnnxOptions o;
    o.imgsz = kImgsz;
    o.batch = 2;
    o.opset = exporter::kMaxOpset;
    m->fuse();
    const std::string path = dir.file("fixed.onnx");
    exporter::export_onnx(*m, o, path);
    const auto ort = run_onnxruntime(*python, path, {{"b2", *images}}, dir);
    CHECK(difference(ort.tensors.at("b2"), expected, *m) <= kOnnxToleranceUlps);
    CHECK(nlohmann::json::parse(ort.metadata.at("input_dims")) ==
          nlohmann::json({2, 3, kImgsz, kImgsz}));
    CHECK(ort.metadata.at("opset") == std::to_string(exporter::kMaxOpset));
  }
}

// The fp16 bar and its reasons: kHalfToleranceU in export_fixtures.h.
TEST_CASE("ONNX export in float16 stays within fp16 rounding of LibTorch's fp32", "[export]") {
  const auto python = onnx_python_or_skip();
  if (!python) return;
  const auto images = coco_images(2, kImgsz);
  if (!images) return;
  const auto c = export_cases().at(2);  // yolo11n: a decoded tensor, compared element-wise
  REQUIRE(c.name == "yolo11n");
  TempDir dir("export-onnx-half");
  auto m = random_model(c);
  const auto expected = libtorch_output(*m, *images).decoded;  // [B, 84, A]
  exporter::OnnxOptions o;
  o.imgsz = kImgsz;
  o.batch = 2;
  o.half = true;
  const std::string half = dir.file("half.onnx");
  exporter::export_onnx(*m, o, half);
  const auto ort = run_onnxruntime(*python, half, {{"b2", *images}}, dir);
  CHECK(ort.metadata.at("args").find("'quantize': 16") != std::string::npos);
  const HalfError e = half_error(ort.tensors.at("b2"), expected, m->arch().nc);
  std::cout << "yolo11n float16 (random init): boxes within " << e.boxes_u << "u, logits within "
            << e.logits_u << "u of LibTorch fp32 (u = 2^-11)\n";
  CHECK(e.boxes_u <= kHalfToleranceU);
  CHECK(e.logits_u <= kHalfToleranceU);
}

// The README's figures: `build/detrain_tests "[export-measure]"` (hidden from the default run:
// it trains for a few seconds and times). yolo26n after one epoch at 64 px (its boxes no longer
// the init's), at 640 px on 3 coco-mini images, one file, one run.
TEST_CASE("yolo26n at 640 px: onnxruntime vs LibTorch max difference and CPU latency",
          "[.][export-measure]") {
  const auto python = onnx_python_or_skip();
  if (!python) return;
  const auto images = coco_images(3, 640);
  if (!images) return;
  TempDir dir("export-measure");
  const std::string ckpt = short_trained_checkpoint(export_cases().front(), dir);
  auto m = tasks::load_inference_model(ckpt, config::resolve("", {}), {}).model;
  m->fuse();
  std::vector<model::EvalOutput> expected;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < 3; ++i)
    expected.push_back(libtorch_output(*m, images->slice(0, i, i + 1)));
  const double libtorch_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
      3;
  exporter::OnnxOptions o;
  o.imgsz = 640;
  const std::string path = dir.file("yolo26n.onnx");
  exporter::export_onnx(*m, o, path);
  std::map<std::string, torch::Tensor> inputs;
  for (int64_t i = 0; i < 3; ++i)
    inputs["image" + std::to_string(i)] = images->slice(0, i, i + 1).contiguous();
  const auto ort = run_onnxruntime(*python, path, inputs, dir, /*timed_runs=*/5);
  double diff = 0;
  for (int64_t i = 0; i < 3; ++i)
    diff = std::max(diff,
                    difference(ort.tensors.at("image" + std::to_string(i)), expected[i], *m, 640));
  std::cout << "yolo26n 640 px: onnxruntime vs LibTorch " << diff << " ulps of the output's scale"
            << "; onnxruntime CPU " << ort.metadata.at("latency_ms") << " ms/image (median), "
            << "LibTorch CPU " << libtorch_ms << " ms/image (mean of 3)\n";
  CHECK(diff <= kOnnxToleranceUlps);
}
