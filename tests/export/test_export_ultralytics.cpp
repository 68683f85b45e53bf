// detrain's ONNX files in the hands of an Ultralytics user: `detrain export -w X.pt` of the
// reference's own .pt fixtures (tests/golden/pt_fixtures.py), then in the reference environment
// (Ultralytics 8.4.190 with onnxruntime, .venv-ref) YOLO(onnx) reads the metadata as its own,
// and its predict and val equal YOLO(pt)'s, for end-to-end and NMS models, detect and pose (the
// one-epoch NMS pose model only in val, see the predict case); and the README's onnxruntime
// snippets run as printed. tests/export/ultralytics_onnx.py does the
// Python side. Skips visibly where .venv-ref has no onnxruntime (scripts/setup.sh installs it).
//
// Torch-free on purpose (no export_fixtures.h): a LibTorch header included after catch.hpp in a
// file built without the precompiled header replaces Catch's CHECK with c10's.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/paths.h"
#include "common/subprocess.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::test;

namespace {

struct PtCase {
  std::string fixture;  // under <build>/golden/pt
  bool end2end = false;
  bool pose = false;
  int64_t imgsz = 160;  // the size it was trained at
  double conf = 0.001;  // predict threshold
};

// An end-to-end and an NMS model, detect and pose. yolo11n-predict finds objects (trained until it
// does, at 128 px; conf from its MANIFEST entry); the one-epoch fixtures rank real boxes with low
// scores: yolo26n-pose's lie around 0.012, so at conf 0.001 each photo keeps its top rows;
// yolo26n's all lie at 1.5756e-4 (within 1e-7 of each other), so conf 1e-4 keeps all 300 rows
// of each photo, the 300th a tie that rounding breaks (borderline below).
std::vector<PtCase> pt_cases() {
  return {{"yolo11n-predict/last.pt", false, false, 128, 0.05},
          {"yolo26n-trained/best.pt", true, false, 160, 1e-4},
          {"yolo11n-pose-trained/best.pt", false, true},
          {"yolo26n-pose-trained/best.pt", true, true}};
}

// Runs tests/export/ultralytics_onnx.py COMMAND ARGS... in .venv-ref; its last "RESULT " line as
// JSON, or nullopt after a visible skip where that environment lacks onnxruntime (exit 3).
std::optional<nlohmann::json> ultralytics(const std::vector<std::string>& command) {
  TempDir out("export-ultralytics-log");
  std::vector<std::string> argv{reference_python(),
                                source_dir() + "/tests/export/ultralytics_onnx.py"};
  argv.insert(argv.end(), command.begin(), command.end());
  const int exit_code = run_program(argv[0], argv, out.file("output.txt"));
  std::ifstream log(out.file("output.txt"));
  std::stringstream text;
  text << log.rdbuf();
  const std::string output = text.str();
  if (exit_code == 3) {
    skip(output);
    return std::nullopt;
  }
  INFO(output);
  REQUIRE(exit_code == 0);
  const auto start = output.rfind("RESULT ");
  REQUIRE(start != std::string::npos);
  const auto end = output.find('\n', start);
  return nlohmann::json::parse(output.substr(start + 7, end - start - 7));
}

std::string export_pt(const PtCase& c, const TempDir& dir, const std::string& extra = "") {
  const std::string onnx = dir.file("model.onnx");
  const auto r = run_detrain("export -w '" + golden("pt/" + c.fixture) + "' --imgsz " +
                             std::to_string(c.imgsz) + " -o '" + onnx + "'" + extra);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return onnx;
}

// coco-mini in YOLO format under `dir`, made now (the val run writes label caches into it).
std::optional<std::string> yolo_copy(const TempDir& dir) {
  const auto data = shared_data_or_skip("coco-mini/annotations");
  if (!data) return std::nullopt;
  const auto root = std::filesystem::path(*data).parent_path().parent_path().string();
  const auto made = ultralytics({"yolo-copy", root, dir.path()});
  if (!made) return std::nullopt;
  return made->at("root").get<std::string>();
}

}  // namespace

TEST_CASE("YOLO(x.onnx) reads detrain's metadata as its own export's",
          "[export][ultralytics][slow]") {
  std::ifstream manifest_file(golden("pt/MANIFEST.json"));
  const auto manifest = nlohmann::json::parse(manifest_file);
  for (const auto& c : pt_cases()) {
    INFO(c.fixture);
    TempDir dir("export-ultralytics-meta");
    for (const bool dynamic : {false, true}) {
      INFO("dynamic " << dynamic);
      const auto meta = ultralytics({"meta", export_pt(c, dir, dynamic ? " --dynamic" : "")});
      if (!meta) return;
      const auto& m = *meta;
      CHECK(m.at("format") == "onnx");
      CHECK(m.at("task") == (c.pose ? "pose" : "detect"));
      CHECK(m.at("stride") == 32);
      CHECK(m.at("imgsz") == nlohmann::json({c.imgsz, c.imgsz}));
      CHECK(m.at("batch") == 1);
      CHECK(m.at("channels") == 3);
      CHECK(m.at("end2end") == c.end2end);
      CHECK(m.at("dynamic") == dynamic);
      CHECK(m.at("fp16") == false);  // the input stays float32 (also for --half)
      CHECK(m.at("kpt_shape") == (c.pose ? nlohmann::json({17, 3}) : nlohmann::json::array()));
      const auto& names = manifest.at(c.fixture).at("names");
      REQUIRE(m.at("names").size() == names.size());
      for (size_t i = 0; i < names.size(); ++i)
        CHECK(m.at("names").at(std::to_string(i)) == names.at(i));
    }
  }
}

TEST_CASE("YOLO(x.onnx).predict equals YOLO(x.pt).predict on coco-mini photos",
          "[export][ultralytics][parity][slow]") {
  TempDir data("export-ultralytics-data");
  const auto root = yolo_copy(data);
  if (!root) return;
  for (const auto& c : pt_cases()) {
    // The one-epoch yolo11n-pose scores every anchor alike (its boxes and keypoints are near the
    // anchor's prior), so NMS between near-equal candidates keeps a different one of them on
    // each side for a third of its detections: no comparison of single detections holds there.
    // The val test below covers it.
    if (c.fixture == "yolo11n-pose-trained/best.pt") continue;
    INFO(c.fixture);
    TempDir dir("export-ultralytics-predict");
    const std::string images = *root + (c.pose ? "/pose" : "/detect") + "/images/val";
    const auto s = ultralytics({"predict", golden("pt/" + c.fixture), export_pt(c, dir), images,
                                std::to_string(c.imgsz), std::to_string(c.conf)});
    if (!s) return;
    INFO(s->dump());
    std::cout << c.fixture << ": YOLO(onnx) vs YOLO(pt).predict on " << s->at("images")
              << " photos: " << s->at("matched") << "/" << s->at("detections")
              << " detections equal (box within " << s->at("max_box_px") << " input px, score "
              << s->at("max_score") << "), borderline " << s->at("borderline") << ", near ties "
              << s->at("near_ties") << "\n";
    // Equal as ultralytics_onnx.py's compare() defines it (tolerances and reasons there); a
    // fixture that gives almost nothing would prove nothing.
    CHECK(s->at("unmatched") == 0);
    CHECK(s->at("detections").get<int64_t>() >= 100);
    // Borderline and near-tie detections (either side) are exempt; they must stay rare.
    CHECK(s->at("borderline").get<double>() + s->at("near_ties").get<double>() <=
          0.02 * s->at("compared").get<double>());
  }
}

TEST_CASE("YOLO(x.onnx).val gives YOLO(x.pt).val's mAP on coco-mini in YOLO format",
          "[export][ultralytics][parity][slow]") {
  TempDir data("export-ultralytics-val");
  const auto root = yolo_copy(data);
  if (!root) return;
  for (const auto& c : pt_cases()) {
    INFO(c.fixture);
    TempDir dir("export-ultralytics-val-run");
    const std::string yaml = *root + (c.pose ? "/pose.yaml" : "/detect.yaml");
    const auto v = ultralytics({"val", golden("pt/" + c.fixture), export_pt(c, dir), yaml,
                                std::to_string(c.imgsz), dir.file("runs")});
    if (!v) return;
    INFO(v->dump());
    std::cout << c.fixture << ": val mAP50-95 (pt / onnx) box " << v->at("pt").at("box_map")
              << " / " << v->at("onnx").at("box_map");
    if (c.pose)
      std::cout << ", pose " << v->at("pt").at("pose_map") << " / " << v->at("onnx").at("pose_map");
    std::cout << "\n";
    // Same letterboxed inputs, predictions equal to kernel rounding (the predict test): at most
    // a detection at the 0.001 threshold or an IoU-threshold crossing changes, which moves a
    // 48-photo mAP by far less than 1e-3.
    for (const char* key : {"box_map", "box_map50", "pose_map", "pose_map50"}) {
      if (!v->at("pt").contains(key)) continue;
      INFO(key);
      CHECK(std::abs(v->at("pt").at(key).get<double>() - v->at("onnx").at(key).get<double>()) <=
            1e-3);
    }
  }
}

TEST_CASE("README's onnxruntime snippets run as printed on both output kinds",
          "[export][ultralytics][slow]") {
  TempDir data("export-ultralytics-readme");
  const auto root = yolo_copy(data);
  if (!root) return;
  // The photo where the reference's own predict of yolo11n-predict (last.pt.predict.json, made
  // by pt_fixtures.py) has the most boxes above the snippets' 0.25.
  std::ifstream predict_file(golden("pt/yolo11n-predict/last.pt.predict.json"));
  const auto predicted = nlohmann::json::parse(predict_file);
  std::string photo;
  int64_t most = 0;
  for (const auto& image : predicted) {
    const auto& scores = image.at("scores");
    const auto n = std::count_if(scores.begin(), scores.end(),
                                 [](const nlohmann::json& s) { return s.get<double>() > 0.25; });
    if (n > most) most = n, photo = image.at("file").get<std::string>();
  }
  REQUIRE(most > 0);
  TempDir e2e_dir("export-readme-e2e"), nms_dir("export-readme-nms");
  const std::string e2e = export_pt(pt_cases().at(1), e2e_dir);
  const std::string nms = export_pt(pt_cases().at(0), nms_dir);
  const auto r = ultralytics({"readme", source_dir() + "/README.md", e2e, nms,
                              *root + "/detect/images/val/" + photo, data.file("snippets")});
  if (!r) return;
  INFO(r->dump());
  for (const char* run : {"e2e", "e2e-all-rows", "nms"}) {
    INFO(run);
    // What it prints equals YOLO(onnx).predict(conf=the snippet's threshold), one for one.
    CHECK(r->at(run).at("unmatched") == 0);
    CHECK(r->at(run).at("extra") == 0);
  }
  // The one-epoch yolo26n scores nothing above 0.25; with the threshold at 0 every one of its
  // 300 rows prints. The overfitted yolo11n finds objects in this photo.
  CHECK(r->at("e2e-all-rows").at("ultralytics") == 300);
  CHECK(r->at("nms").at("ultralytics").get<int64_t>() >= 1);
}
