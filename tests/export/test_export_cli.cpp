// `detrain export` on bad input: one clear line, the documented exit code (errors.h / README),
// and no file (nor temporary file) left behind.
#include <catch2/catch.hpp>
#include <filesystem>

#include "ckpt/checkpoint.h"
#include "export/weights_export.h"
#include "model/state_dict.h"
#include "model/yolo_model.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::test;
namespace fs = std::filesystem;

namespace {

size_t lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("detrain export rejects bad input with one line and its exit code", "[export]") {
  TempDir dir("export-cli");
  config::ModelOptions options;
  options.arch = "models/yolo26.yaml";
  options.scale = "n";
  auto m = model::make_model(options);
  const std::string weights = dir.file("w.safetensors");
  exporter::export_safetensors(*m, weights);
  write_text(dir.file("a-file"), "x");
  const std::string arch = " model.arch=models/yolo26.yaml model.scale=n";

  SECTION("an image size that is not a multiple of the stride: usage error 2") {
    const auto r = run_detrain("export --weights '" + weights + "' --imgsz 100 -o '" +
                               dir.file("m.onnx") + "'" + arch);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(lines(r.output) == 1);
    CHECK(r.output.find("--imgsz 100 is not a multiple of") != std::string::npos);
  }
  SECTION("a format that is not supported: usage error 2") {
    const auto r = run_detrain("export --weights '" + weights + "' --format tflite -o '" +
                               dir.file("m.tflite") + "'" + arch);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(lines(r.output) == 1);
    CHECK(r.output.find("--format tflite is not supported") != std::string::npos);
  }
  SECTION("an output path that cannot be written: I/O error 5") {
    for (const char* format : {"onnx", "safetensors"}) {
      const std::string out = dir.file("a-file") + "/m." + format;  // parent is a file
      const auto r = run_detrain("export --weights '" + weights + "' --format " + format +
                                 " --imgsz 64 -o '" + out + "'" + arch);
      INFO(r.output);
      CHECK(r.exit_code == 5);
      CHECK(lines(r.output) == 1);
      CHECK(r.output.find(out) != std::string::npos);
    }
  }
  SECTION("a checkpoint of an unknown architecture: model error 6") {
    ckpt::Checkpoint c;
    c.arch.arch_file = "models/yolo99.yaml";
    c.arch.scale = "n";
    c.arch.nc = 80;
    c.model = model::state_dict(*m);
    c.config_yaml = "model:\n  arch: models/yolo99.yaml\n  scale: n\n";
    const std::string ckpt = dir.file("foreign.ckpt");
    ckpt::save_checkpoint(ckpt, c);
    const auto r = run_detrain("export --weights '" + ckpt + "' -o '" + dir.file("m.onnx") + "'");
    INFO(r.output);
    CHECK(r.exit_code == 6);
    CHECK(lines(r.output) == 1);
    CHECK(r.output.find("yolo99") != std::string::npos);
  }
  // Nothing half-written: only the inputs remain.
  const auto left = entries(dir.path());
  const std::vector<std::string> inputs{"a-file", "w.safetensors"};
  const std::vector<std::string> with_ckpt{"a-file", "foreign.ckpt", "w.safetensors"};
  CHECK((left == inputs || left == with_ckpt));
}

TEST_CASE("detrain export --help says which input dimensions are dynamic", "[export]") {
  const auto r = run_detrain("export --help");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("batch dimension left free") &&
                           Catch::Contains("height and width stay fixed at") &&
                           Catch::Contains("fixed in the file"));
}
