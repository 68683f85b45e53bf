// See export_fixtures.h.
#include "export/export_fixtures.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common/paths.h"
#include "config/config.h"
#include "model/safetensors.h"
#include "report/run_dir.h"
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
  return report::run_paths(summary.run_dir).last_ckpt;
}

model::YoloModel responsive_model(const ExportCase& c, const torch::Tensor& images) {
  torch::manual_seed(11);
  config::ModelOptions options;
  options.arch = c.arch;
  options.scale = "n";
  auto m = model::make_model(options);
  {
    torch::NoGradGuard no_grad;
    for (const auto& module : m->modules(/*include_self=*/false)) {
      if (auto* conv = module->as<torch::nn::Conv2dImpl>()) {
        if (!conv->weight.requires_grad()) continue;  // fixed weights (the DFL's bin values)
        const auto fan_in = conv->weight[0].numel();
        conv->weight.normal_(0, std::sqrt(2.0 / static_cast<double>(fan_in)));
        if (conv->bias.defined()) conv->bias.zero_();
      } else if (auto* bn = module->as<torch::nn::BatchNorm2dImpl>()) {
        bn->options.momentum(1.0);  // the running statistics become this batch's
      }
    }
  }
  m->train();
  {
    torch::NoGradGuard no_grad;
    m->forward_train(images);
  }
  m->eval();
  return m;
}

std::optional<std::string> onnx_python_or_skip() {
  const std::string venv = test_venv();
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

namespace {

// Per channel of a decoded tensor's rows (4 box, nc scores, then keypoints of kpt_shape[1]
// values each) or of a detections row (4 box, score, class, keypoints): the size of one ulp of
// the channel's scale, or 0 for the class column (compared exactly by the row match).
torch::Tensor channel_ulps(const model::ArchInfo& arch, int64_t imgsz, bool detections_row) {
  const double coordinate = std::nextafter(static_cast<float>(imgsz), 1e30f) - imgsz;
  const double probability = std::nextafter(1.0f, 2.0f) - 1.0f;
  std::vector<double> unit(4, coordinate);
  if (detections_row) {
    unit.push_back(probability);  // score
    unit.push_back(0);            // class
  } else {
    unit.insert(unit.end(), arch.nc, probability);
  }
  const int64_t nk = arch.kpt_shape[0], kd = arch.kpt_shape[1];
  for (int64_t k = 0; k < nk * kd; ++k) unit.push_back(k % kd < 2 ? coordinate : probability);
  return torch::tensor(unit, torch::kDouble);
}

}  // namespace

OnnxError onnx_difference(const torch::Tensor& ort, const model::EvalOutput& libtorch,
                          const model::ArchInfo& arch, int64_t imgsz) {
  const int64_t nc = arch.nc;
  OnnxError error;
  // ulps per element, and the channel kind of the worst one.
  auto record = [&](const torch::Tensor& ulps, const torch::Tensor& units) {
    const double worst = ulps.max().item<double>();
    if (worst < error.ulps) return;
    error.ulps = worst;
    const auto channel = std::get<1>(ulps.reshape({-1, units.size(0)}).max(0)).argmax();
    const double probability_ulp = std::nextafter(1.0f, 2.0f) - 1.0f;
    error.where = units[channel.item<int64_t>()].item<double>() == probability_ulp ? "probability"
                                                                                   : "coordinate";
  };
  if (!arch.end2end) {
    REQUIRE(ort.sizes() == libtorch.decoded.sizes());
    const auto units = channel_ulps(arch, imgsz, false);
    REQUIRE(units.size(0) == ort.size(1));
    const auto diff = (ort.to(torch::kDouble) - libtorch.decoded.to(torch::kDouble)).abs();
    record((diff / units.view({1, -1, 1})).transpose(1, 2), units);  // [B, A, C]
    return error;
  }
  REQUIRE(ort.sizes() == libtorch.detections.sizes());
  const auto units = channel_ulps(arch, imgsz, true);
  REQUIRE(units.size(0) == ort.size(2));
  // The class column is matched exactly; the others are compared in ulps.
  const auto row_units = torch::cat({units.slice(0, 0, 5), units.slice(0, 6)});
  const auto rows = ort.to(torch::kDouble);  // [B, k, 6 + nk]
  for (int64_t b = 0; b < rows.size(0); ++b) {
    const auto preds = libtorch.decoded[b].t().to(torch::kDouble);  // [A, 4 + nc + nk]
    const auto r = rows[b];                                         // [k, 6 + nk]
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
    // The anchor that matches best (in ulps), then the worst row.
    const auto ulps = (row - candidates).abs() / row_units;      // [k, A, 5 + nk]
    const auto best_anchor = std::get<1>(ulps.amax(-1).min(1));  // [k]
    const auto matched = ulps.gather(1, best_anchor.view({-1, 1, 1}).expand({-1, 1, ulps.size(2)}))
                             .squeeze(1);  // [k, 5 + nk]
    record(matched, row_units);
    // Scores in descending order (their values are in the matched rows).
    const auto scores_ort = r.select(1, 4);
    if (scores_ort.size(0) > 1)
      CHECK((scores_ort.slice(0, 1) <= scores_ort.slice(0, 0, -1)).all().item<bool>());
  }
  return error;
}

double perturbed_ulps(const std::string& python, const std::string& onnx_path,
                      const std::string& mode, const torch::Tensor& images,
                      const model::EvalOutput& expected, const model::ArchInfo& arch, int64_t imgsz,
                      const TempDir& dir) {
  INFO("perturbation " << mode);
  const std::string changed = dir.file(mode + ".onnx");
  const auto r =
      run_command("'" + python + "' '" + source_dir() + "/tests/export/perturb_onnx.py' '" +
                  onnx_path + "' '" + changed + "' " + mode);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto ort = run_onnxruntime(python, changed, {{"images", images}}, dir);
  return onnx_difference(ort.tensors.at("images"), expected, arch, imgsz).ulps;
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
