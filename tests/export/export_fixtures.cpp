// See export_fixtures.h.
#include "export/export_fixtures.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common/paths.h"
#include "config/config.h"
#include "model/safetensors.h"
#include "train/run_dir.h"
#include "train/trainer.h"

namespace detrain::test {

namespace fs = std::filesystem;

std::vector<ExportCase> export_cases() {
  return {{"yolo26n", "models/yolo26.yaml", "data/coco-mini.yaml"},
          {"yolo26n-pose", "models/yolo26-pose.yaml", "data/coco-mini-pose.yaml"},
          {"yolo11n", "models/yolo11.yaml", "data/coco-mini.yaml"},
          {"yolo11n-pose", "models/yolo11-pose.yaml", "data/coco-mini-pose.yaml"}};
}

std::string short_trained_checkpoint(const ExportCase& c, const TempDir& dir) {
  config::ResolvedConfig rc =
      config::resolve("", {"model.arch=" + c.arch, "model.scale=n", "data.dataset=" + c.dataset,
                           "data.imgsz=64", "data.batch=16", "data.workers=2", "train.epochs=1",
                           "train.warmup_epochs=0", "train.precision=fp32", "train.progress=off",
                           "train.plots=false", "train.project=" + dir.file("runs"),
                           "train.name=" + c.name, "runtime.threads=2", "runtime.seed=5"});
  train::TrainRequest request;
  request.config = rc;
  const auto summary = train::run_training(request);
  return train::run_paths(summary.run_dir).last_ckpt;
}

RunResult run_command(const std::string& command) {
  RunResult result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::optional<std::string> onnx_python_or_skip() {
  const char* env = std::getenv("DETRAIN_TEST_VENV");
  const std::string venv = env && *env ? env : source_dir() + "/.venv-test";
  const std::string python = venv + "/bin/python";
  if (fs::exists(python) &&
      run_command("'" + python + "' -c 'import onnx, onnxruntime, numpy'").exit_code == 0)
    return python;
  skip("no onnx/onnxruntime test environment at " + venv + " (run scripts/setup.sh)");
  return std::nullopt;
}

std::optional<torch::Tensor> coco_images(int64_t count, int64_t imgsz) {
  const auto root = shared_data_or_skip("coco-mini/images");
  if (!root) return std::nullopt;
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(*root))
    if (entry.path().extension() == ".jpg") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  REQUIRE(static_cast<int64_t>(files.size()) >= count);
  std::vector<torch::Tensor> images;
  for (int64_t i = 0; i < count; ++i) {
    cv::Mat bgr = cv::imread(files[i], cv::IMREAD_COLOR);
    REQUIRE(!bgr.empty());
    cv::Mat rgb;
    cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
    cv::resize(rgb, rgb, cv::Size(static_cast<int>(imgsz), static_cast<int>(imgsz)), 0, 0,
               cv::INTER_LINEAR);
    auto hwc = torch::from_blob(rgb.data, {imgsz, imgsz, 3}, torch::kUInt8).clone();
    images.push_back(hwc.permute({2, 0, 1}).to(torch::kFloat).div(255.0));
  }
  return torch::stack(images).contiguous();
}

OrtOutputs run_onnxruntime(const std::string& python, const std::string& onnx_path,
                           const std::map<std::string, torch::Tensor>& inputs, const TempDir& dir,
                           int timed_runs) {
  const std::string in = dir.file("ort_inputs.safetensors");
  const std::string out = dir.file("ort_outputs.safetensors");
  std::vector<std::pair<std::string, torch::Tensor>> list(inputs.begin(), inputs.end());
  model::write_safetensors(in, list);
  const auto r =
      run_command("'" + python + "' '" + source_dir() + "/tests/export/ort_run.py' '" + onnx_path +
                  "' '" + in + "' '" + out + "' " + std::to_string(timed_runs));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto file = model::read_safetensors(out);
  return {file.tensors, file.metadata};
}

double max_abs_difference(const torch::Tensor& a, const torch::Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  if (a.numel() == 0) return 0;
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

double onnx_difference(const torch::Tensor& ort, const model::EvalOutput& libtorch, int64_t nc,
                       bool end2end) {
  auto difference = [](const torch::Tensor& a, const torch::Tensor& b) {
    return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs();  // broadcasting
  };
  if (!end2end) {
    REQUIRE(ort.sizes() == libtorch.decoded.sizes());
    return difference(ort, libtorch.decoded).max().item<double>();
  }
  REQUIRE(ort.sizes() == libtorch.detections.sizes());
  const auto rows = ort.to(torch::kFloat);  // [B, k, 6 + nk]
  double worst = 0;
  for (int64_t b = 0; b < rows.size(0); ++b) {
    const auto preds = libtorch.decoded[b].t();  // [A, 4 + nc + nk]
    const auto r = rows[b];                      // [k, 6 + nk]
    const auto cls = r.select(1, 5).round().to(torch::kLong);
    REQUIRE(cls.min().item<int64_t>() >= 0);
    REQUIRE(cls.max().item<int64_t>() < nc);
    // Candidate rows per (detection, anchor): [k, A, 5 + nk] = box, that class's score, kpts.
    std::vector<torch::Tensor> parts{
        preds.slice(1, 0, 4).unsqueeze(0).expand({r.size(0), -1, -1}),
        preds.slice(1, 4, 4 + nc).index_select(1, cls).t().unsqueeze(-1)};
    if (r.size(1) > 6)
      parts.push_back(preds.slice(1, 4 + nc).unsqueeze(0).expand({r.size(0), -1, -1}));
    const auto candidates = torch::cat(parts, -1);
    const auto row = torch::cat({r.slice(1, 0, 5), r.slice(1, 6)}, 1).unsqueeze(1);  // [k, 1, 5+nk]
    // The anchor that matches best, then the worst row.
    const auto per_anchor = difference(row, candidates).amax(-1);  // [k, A]
    worst = std::max(worst, std::get<0>(per_anchor.min(1)).max().item<double>());
    // The same top-k scores, in descending order.
    const auto scores_ort = r.select(1, 4);
    CHECK(max_abs_difference(scores_ort, libtorch.detections[b].select(1, 4)) <= 1e-4);
    if (scores_ort.size(0) > 1)
      CHECK((scores_ort.slice(0, 1) <= scores_ort.slice(0, 0, -1)).all().item<bool>());
  }
  return worst;
}

HalfError half_error(const torch::Tensor& ort, const torch::Tensor& decoded, int64_t nc) {
  REQUIRE(ort.sizes() == decoded.sizes());
  constexpr double u = 1.0 / 2048;
  const auto expected = decoded.to(torch::kDouble), got = ort.to(torch::kDouble);
  const auto box = expected.slice(1, 0, 4), box_got = got.slice(1, 0, 4);
  auto logit = [](const torch::Tensor& s) { return (s / (1 - s)).log(); };
  const auto l = logit(expected.slice(1, 4, 4 + nc)), l_got = logit(got.slice(1, 4, 4 + nc));
  HalfError e;
  e.boxes_u = ((box_got - box).abs() / box.abs().clamp_min(8.0)).max().item<double>() / u;
  e.logits_u = ((l_got - l).abs() / l.abs().clamp_min(1.0)).max().item<double>() / u;
  return e;
}

}  // namespace detrain::test
