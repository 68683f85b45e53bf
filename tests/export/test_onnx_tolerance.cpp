// Both sides of the fp32 export bar (kOnnxToleranceUlps, export_fixtures.h): the bar must pass
// the rounding noise two correct runtimes have and fail a wrong graph. yolo11n (NMS head: every
// element compared) and yolo26n (end2end head: rows matched to anchors), with weights whose
// outputs depend on the input (responsive_model), run in onnxruntime as exported, with every
// convolution weight one float32 ulp off (one ulp of noise at every layer), and with one SiLU
// dropped (at the start, the middle and the end of the graph).
#include <catch2/catch.hpp>

#include "config/config.h"
#include "export/export_fixtures.h"
#include "export/onnx_export.h"
#include "model/yolo_model.h"

using namespace detrain;
using namespace detrain::test;

TEST_CASE("the fp32 export bar passes one ulp of weight noise and fails a missing activation",
          "[export]") {
  const auto python = onnx_python_or_skip();
  if (!python) return;
  constexpr int64_t kImgsz = 256;
  const auto images = coco_images(2, kImgsz);
  if (!images) return;
  for (const auto& c : {export_cases().at(2), export_cases().at(0)}) {  // yolo11n, yolo26n
    INFO(c.name);
    TempDir dir("export-tolerance");
    auto m = responsive_model(c, *images);
    torch::NoGradGuard no_grad;
    const auto expected = m->forward_eval(*images, 300);
    exporter::OnnxOptions o;
    o.imgsz = kImgsz;
    o.batch = 2;
    const std::string path = dir.file("m.onnx");
    exporter::export_onnx(*m, o, path);
    const auto ort = run_onnxruntime(*python, path, {{"b2", *images}}, dir);
    const double exported = onnx_difference(ort.tensors.at("b2"), expected, m->arch(), kImgsz).ulps;
    auto perturbed = [&](const std::string& mode) {
      return perturbed_ulps(*python, path, mode, *images, expected, m->arch(), kImgsz, dir);
    };
    const double noisy = perturbed("ulp");
    std::cout << c.name << " (responsive weights): ulps of the output's scale: as exported "
              << exported << ", one ulp on every weight " << noisy;
    CHECK(exported <= kOnnxToleranceUlps);
    CHECK(noisy <= kOnnxToleranceUlps);
    for (const char* where : {"first", "middle", "last"}) {
      const double wrong = perturbed(std::string("drop-silu-") + where);
      std::cout << ", " << where << " SiLU dropped " << wrong;
      CHECK(wrong > 2 * kOnnxToleranceUlps);  // well outside, not a near miss
    }
    std::cout << " (bar " << kOnnxToleranceUlps << ")\n";
  }
}
