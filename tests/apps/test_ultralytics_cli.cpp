// The Ultralytics user's habits from the command line: a `.pt` (tests/golden/pt_fixtures.py,
// made by ultralytics 8.4.190) wherever weights are taken, `model=` / `data=` and flat
// arguments as `yolo` takes them, and the one-line errors for files that are not Ultralytics
// models. Run as a user would, through the detrain binary.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/errors.h"
#include "test_support.h"

using namespace detrain;
using detrain::test::run_detrain;
namespace fs = std::filesystem;

namespace {

std::string pt(const std::string& file) { return test::golden("pt/" + file); }

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("detrain model / predict / export take an Ultralytics .pt", "[smoke][cli][pt]") {
  const auto table = run_detrain("model -w " + pt("yolo11n-pose-trained/best.pt"));
  INFO(table.output);
  CHECK(table.exit_code == 0);
  CHECK(table.output.find("yolo11n-pose (models/yolo11-pose.yaml") != std::string::npos);

  test::TempDir dir;
  const std::string val_images =
      (fs::path(pt("MANIFEST.json")).parent_path() / "coco-mini-yolo/detect/images/val").string();
  // model= instead of -w, as `yolo predict model=...`; names come from the file.
  const auto predict = run_detrain("predict model=" + pt("yolo26n-trained/last.pt") + " -s " +
                                   val_images + " -o " + dir.file("pred") + " --no-draw");
  INFO(predict.output);
  CHECK(predict.exit_code == 0);
  CHECK(predict.output.find("on 48 images") != std::string::npos);

  const auto exported = run_detrain("export -w " + pt("yolov8n-random.pt") + " -f safetensors -o " +
                                    dir.file("v8.safetensors"));
  INFO(exported.output);
  CHECK(exported.exit_code == 0);
  CHECK(fs::exists(dir.file("v8.safetensors")));
}

TEST_CASE("files that are not Ultralytics models exit 6 with one line", "[smoke][cli][pt]") {
  for (const char* file :
       {"bad-unknown-class.pt", "bad-torchvision.pt", "bad-state-dict.pt", "bad-truncated.pt"}) {
    const auto r = run_detrain("val -w " + pt(file));
    INFO(r.output);
    CHECK(r.exit_code == static_cast<int>(ExitCode::kModel));
    CHECK(r.output.find(file) != std::string::npos);
    CHECK(r.output.find("Traceback") == std::string::npos);
  }
  const auto none = run_detrain("val");
  CHECK(none.exit_code == static_cast<int>(ExitCode::kUsage));
  CHECK(none.output.find("-w FILE or model=FILE") != std::string::npos);
}

TEST_CASE("yolo-style train from a .pt: the file's architecture, flat arguments",
          "[smoke][cli][pt]") {
  if (!test::shared_data_or_skip("coco-mini")) return;
  test::TempDir dir;
  // 8 images at 64 px for one epoch: enough to run the whole train + val path.
  const auto r = run_detrain("train model=" + pt("yolo11n-trained/best.pt") +
                             " data=data/coco-mini.yaml epochs=1 imgsz=64 batch=8 fraction=0.1 "
                             "optimizer=SGD lr0=0.002 workers=0 device=cpu train.project=" +
                             dir.path() + " train.name=ft");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("transferred 499/499 items") != std::string::npos);
  const std::string args = read_text(dir.file("ft/args.yaml"));
  CHECK(args.find("arch: models/yolo11.yaml") != std::string::npos);
  CHECK(args.find("optimizer: sgd") != std::string::npos);
  CHECK(args.find("lr0: 0.002") != std::string::npos);

  // An architecture that disagrees with the file names both.
  const auto wrong = run_detrain("train model=" + pt("yolo11n-trained/best.pt") +
                                 " -m yolo26n data=data/coco-mini.yaml epochs=1");
  CHECK(wrong.exit_code == static_cast<int>(ExitCode::kModel));
  CHECK(wrong.output.find("yolo11n") != std::string::npos);
  CHECK(wrong.output.find("yolo26") != std::string::npos);

  // A flat argument detrain does not have is refused, never ignored.
  const auto unknown = run_detrain("train data=data/coco-mini.yaml epochs=1 copy_paste_mode=mixup");
  CHECK(unknown.exit_code == static_cast<int>(ExitCode::kConfig));
  CHECK(unknown.output.find("copy_paste_mode") != std::string::npos);
}

TEST_CASE("yolo train / val on a YOLO-format data set (Ultralytics data YAML + txt labels)",
          "[smoke][cli][pt][yolo]") {
  test::TempDir dir;
  const std::string detect = pt("coco-mini-yolo/detect.yaml");
  // The command, shrunk: 12 images at 64 px, one epoch.
  const auto r = run_detrain("train model=" + pt("yolo11n-trained/best.pt") + " data=" + detect +
                             " epochs=1 imgsz=64 batch=8 fraction=0.15 workers=0 device=cpu "
                             "train.project=" +
                             dir.path() + " train.name=y");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("transferred 499/499 items") != std::string::npos);
  CHECK(fs::exists(dir.file("y/weights/best.ckpt")));

  // val prints Ultralytics' per-class table before the COCO table: 48 images, and the class
  // rows of the classes with ground truth.
  const auto val = run_detrain("val -w " + dir.file("y/weights/best.ckpt") + " -d " + detect +
                               " data.imgsz=64 --json-out " + dir.file("stats.json"));
  INFO(val.output);
  REQUIRE(val.exit_code == 0);
  const std::string out = "\n" + val.output;  // the table may be the output's first line
  const size_t header = out.find("\nclass ");
  REQUIRE(header != std::string::npos);
  const std::string header_line = out.substr(header + 1, out.find('\n', header + 1) - header - 1);
  for (const char* column : {"images", "instances", "P(B)", "R(B)", "mAP50(B)", "mAP50-95(B)"})
    CHECK(header_line.find(column) != std::string::npos);
  CHECK(out.find("\nall ") != std::string::npos);
  CHECK(out.find("\nperson ") != std::string::npos);
  CHECK(out.find("\nbird ") != std::string::npos);
  CHECK(read_text(dir.file("stats.json")).find("\"images\": 48") != std::string::npos);

  // A data YAML with `nc` alone names its classes class_0, ...: the .pt's names are used.
  test::write_text(dir.file("nc-only.yaml"),
                   "path: " + fs::path(detect).parent_path().string() +
                       "/detect\ntrain: images/train\nval: images/val\nnc: 80\n");
  const auto nc_only = run_detrain("val -w " + pt("yolo11n-trained/best.pt") + " -d " +
                                   dir.file("nc-only.yaml") + " data.imgsz=64");
  INFO(nc_only.output);
  REQUIRE(nc_only.exit_code == 0);
  CHECK(("\n" + nc_only.output).find("\nperson ") != std::string::npos);
  CHECK(nc_only.output.find("class_0") == std::string::npos);
  // Training from the .pt on it takes the file's names too (plots, checkpoint).
  const auto nc_train = run_detrain("train model=" + pt("yolo11n-trained/best.pt") +
                                    " data=" + dir.file("nc-only.yaml") +
                                    " epochs=1 imgsz=64 batch=8 fraction=0.1 workers=0 device=cpu "
                                    "train.plots=false train.project=" +
                                    dir.path() + " train.name=nc");
  INFO(nc_train.output);
  REQUIRE(nc_train.exit_code == 0);
  CHECK(nc_train.output.find("names no classes (80 of class_N); using") != std::string::npos);

  // Pose: keypoint columns; one class, so no class rows (as Ultralytics prints it).
  const auto pose = run_detrain("val -w " + pt("yolo11n-pose-trained/best.pt") + " -d " +
                                pt("coco-mini-yolo/pose.yaml") + " data.imgsz=64");
  INFO(pose.output);
  REQUIRE(pose.exit_code == 0);
  CHECK(pose.output.find("mAP50-95(P)") != std::string::npos);
  CHECK(pose.output.find("\nperson ") == std::string::npos);
}
