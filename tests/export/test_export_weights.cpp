// safetensors export: bit-identical round trips (random init, and a short-trained checkpoint's
// EMA weights through the CLI), the reference's names (loaded into the Python reference when it
// is installed), and the CLI's ONNX export (fp32, and fp16 for yolo11n) of a trained checkpoint
// checked in onnxruntime.
#include <catch2/catch.hpp>
#include <filesystem>

#include "ckpt/checkpoint.h"
#include "common/paths.h"
#include "config/config.h"
#include "export/export_fixtures.h"
#include "export/weights_export.h"
#include "model/safetensors.h"
#include "model/state_dict.h"
#include "report/run_dir.h"
#include "tasks/inference_model.h"
#include "train/trainer.h"

using namespace detrain;
using namespace detrain::test;
namespace fs = std::filesystem;

namespace {

config::ModelOptions options_for(const ExportCase& c) {
  config::ModelOptions options;
  options.arch = c.arch;
  options.scale = "n";
  return options;
}

// Names, order, dtypes and bytes all equal.
void check_identical(const std::vector<std::pair<std::string, torch::Tensor>>& a,
                     const std::vector<std::pair<std::string, torch::Tensor>>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    REQUIRE(a[i].first == b[i].first);
    CHECK(a[i].second.scalar_type() == b[i].second.scalar_type());
    CHECK(torch::equal(a[i].second, b[i].second));
  }
}

}  // namespace

TEST_CASE("safetensors export round trips every architecture bit-identically", "[export]") {
  for (const auto& c : export_cases()) {
    INFO(c.name);
    TempDir dir("export-st");
    torch::manual_seed(3);
    auto m = model::make_model(options_for(c));
    const std::string path = dir.file("w.safetensors");
    exporter::export_safetensors(*m, path);
    const auto file = model::read_safetensors(path);
    const auto state = model::state_dict(*m);
    std::vector<std::string> names;
    for (const auto& [name, t] : state) names.push_back(name);
    CHECK(file.order == names);  // reference names, reference order
    CHECK(file.metadata.at("arch") == m->arch().name());
    auto options = options_for(c);
    options.weights = path;
    torch::manual_seed(4);  // another init: only the file can make the weights equal
    auto back = model::make_model(options);
    check_identical(model::state_dict(*back), state);
  }
}

TEST_CASE("a short-trained checkpoint exports to safetensors and ONNX through the CLI",
          "[export][slow]") {
  const auto python = onnx_python_or_skip();
  if (!python) return;
  const auto images = coco_images(3, 256);
  if (!images) return;
  for (const auto& c : export_cases()) {
    INFO(c.name);
    TempDir dir("export-ckpt");
    const std::string ckpt = short_trained_checkpoint(c, dir);
    const ckpt::Checkpoint checkpoint = ckpt::load_checkpoint(ckpt);
    REQUIRE(!checkpoint.ema.empty());

    const std::string st = dir.file("w.safetensors");
    auto r = run_detrain("export --weights '" + ckpt + "' --format safetensors -o '" + st + "'");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    auto options = options_for(c);
    options.weights = st;
    options.nc = checkpoint.arch.nc;  // the data set's (1 for the pose set), not the YAML's
    auto loaded = model::make_model(options);
    // export -> model.weights= gives the checkpoint's EMA tensors bit for bit (the checkpoint
    // lists them in its own order, so by name).
    const auto state = model::state_dict(*loaded);
    REQUIRE(state.size() == checkpoint.ema.size());
    std::map<std::string, torch::Tensor> ema(checkpoint.ema.begin(), checkpoint.ema.end());
    for (const auto& [name, t] : state) {
      INFO(name);
      REQUIRE(ema.count(name) == 1);
      CHECK(t.scalar_type() == ema.at(name).scalar_type());
      CHECK(torch::equal(t, ema.at(name)));
    }

    const std::string onnx = dir.file("m.onnx");
    r = run_detrain("export --weights '" + ckpt + "' --imgsz 256 --dynamic -o '" + onnx + "'");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    auto reference = tasks::load_inference_model(ckpt, config::resolve("", {}), {});
    torch::NoGradGuard no_grad;
    const auto out = reference.model->forward_eval(*images, 300);
    const auto ort = run_onnxruntime(*python, onnx, {{"b3", *images}}, dir);
    const auto& arch = reference.model->arch();
    const auto d = onnx_difference(ort.tensors.at("b3"), out, arch, 256);
    std::cout << c.name << " (trained): onnxruntime vs LibTorch " << d.ulps
              << " ulps of the output's scale (worst: a " << d.where << ")\n";
    CHECK(d.ulps <= kOnnxToleranceUlps);  // see export_fixtures.h
    // The data set was readable: class names in the metadata.
    CHECK(ort.metadata.at("names").find("person") != std::string::npos);
    if (arch.end2end || arch.kpt_shape[0] > 0) continue;
    // --half on trained weights (yolo11n): within fp16 rounding (export_fixtures.h).
    const std::string half = dir.file("half.onnx");
    r = run_detrain("export --weights '" + ckpt + "' --imgsz 256 --dynamic --half -o '" + half +
                    "'");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const auto ort_half = run_onnxruntime(*python, half, {{"b3", *images}}, dir);
    const HalfError e = half_error(ort_half.tensors.at("b3"), out.decoded, arch.nc);
    std::cout << c.name << " (trained) float16: boxes within " << e.boxes_u << "u, logits within "
              << e.logits_u << "u of LibTorch fp32\n";
    CHECK(e.boxes_u <= kHalfToleranceU);
    CHECK(e.logits_u <= kHalfToleranceU);
  }
}

TEST_CASE("exported safetensors load into the Python reference by name", "[export]") {
  // The reference lives in the test environment scripts/setup.sh makes (.venv-ref, Ultralytics
  // 8.4.190); DETRAIN_REFERENCE_PYTHON picks another Python.
  std::string python;
  for (const std::string& candidate :
       {std::string(
            std::getenv("DETRAIN_REFERENCE_PYTHON") ? std::getenv("DETRAIN_REFERENCE_PYTHON") : ""),
        test::reference_python()}) {
    if (!candidate.empty() && fs::exists(candidate) &&
        run_command("'" + candidate + "' -c 'import ultralytics, safetensors'").exit_code == 0) {
      python = candidate;
      break;
    }
  }
  if (python.empty()) {
    FAIL(
        "the Python reference (ultralytics + safetensors) is missing: run scripts/setup.sh "
        "(it makes .venv-ref) or set DETRAIN_REFERENCE_PYTHON");
  }
  for (const auto& c : export_cases()) {
    INFO(c.name);
    TempDir dir("export-ref");
    auto m = model::make_model(options_for(c));
    const std::string path = dir.file("w.safetensors");
    exporter::export_safetensors(*m, path);
    std::string args =
        "'" + path + "' " + m->arch().name() + ".yaml " + std::to_string(m->arch().nc);
    if (m->arch().kpt_shape[0] > 0)
      args += " " + std::to_string(m->arch().kpt_shape[0]) + " " +
              std::to_string(m->arch().kpt_shape[1]);
    const auto r = run_command("'" + python + "' '" + source_dir() +
                               "/tests/export/reference_load.py' " + args);
    INFO(r.output);
    CHECK(r.exit_code == 0);
  }
}
