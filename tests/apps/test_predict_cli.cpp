// `detrain predict` as `yolo predict` is typed: flat arguments (source=, conf=, save_txt=True,
// ...), the numbered default folder (runs/predict, predict2, ...), and the flat arguments it
// refuses, with their reasons. Run from a scratch working directory with an Ultralytics .pt
// (tests/golden/pt_fixtures.py, made by ultralytics 8.4.190).
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "test_support.h"

using namespace detrain;
using detrain::test::run_detrain;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

size_t files_in(const std::string& dir, const std::string& extension) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == extension) ++n;
  return n;
}

}  // namespace

TEST_CASE("yolo-style predict: flat arguments and numbered runs/predict folders",
          "[smoke][cli][pt][predict]") {
  test::TempDir dir("predict-cli");
  const std::string weights = test::golden("pt/yolo26n-trained/last.pt");
  const fs::path val_images =
      fs::path(test::golden("pt/MANIFEST.json")).parent_path() / "coco-mini-yolo/detect/images/val";
  // Three images of the val split in a folder named as the user's.
  fs::create_directories(dir.file("photos"));
  std::vector<fs::path> images;
  for (const auto& e : fs::directory_iterator(val_images)) images.push_back(e.path());
  std::sort(images.begin(), images.end());
  REQUIRE(images.size() >= 3);
  for (size_t i = 0; i < 3; ++i)
    fs::copy_file(images[i], fs::path(dir.file("photos")) / images[i].filename());

  // The line (imgsz lowered to 320 to keep the test short).
  const std::string line =
      "predict model=" + weights + " source=photos conf=0.5 imgsz=320 save_txt=True max_det=100";
  const auto first = run_detrain(line, dir.path());
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  CHECK(contains(first.output, "on 3 images"));
  CHECK(contains(first.output, "runs/predict/predictions.json"));
  CHECK(fs::exists(dir.file("runs/predict/predictions.json")));
  CHECK(fs::is_directory(dir.file("runs/predict/labels")));   // save_txt=True
  CHECK(files_in(dir.file("runs/predict"), ".jpg") == 3);     // drawn images (save=True)
  CHECK_FALSE(fs::exists(dir.file("runs/predict/weights")));  // a folder of results, not a run
  // conf=0.5 reached the model: every detection scores at least 0.5.
  const std::string results = read_file(dir.file("runs/predict/predictions.json"));
  for (size_t at = results.find("\"score\":"); at != std::string::npos;
       at = results.find("\"score\":", at + 1))
    CHECK(std::stod(results.substr(at + 8)) >= 0.5);

  // The same line again: a new folder, as Ultralytics' predict2.
  const auto second = run_detrain(line, dir.path());
  INFO(second.output);
  REQUIRE(second.exit_code == 0);
  CHECK(contains(second.output, "runs/predict2"));
  CHECK(fs::exists(dir.file("runs/predict2/predictions.json")));

  // save=False: no drawn images; name= and exist_ok=True: one folder, reused.
  for (int i = 0; i < 2; ++i) {
    const auto named = run_detrain(
        "predict -w " + weights + " -s photos imgsz=320 save=False name=exp exist_ok=True",
        dir.path());
    INFO(named.output);
    REQUIRE(named.exit_code == 0);
  }
  CHECK(files_in(dir.file("runs/exp"), ".jpg") == 0);
  CHECK(fs::exists(dir.file("runs/exp/predictions_2.json")));  // the second run, beside the first
  CHECK_FALSE(fs::exists(dir.file("runs/exp2")));
  // project= moves the numbered folder.
  const auto project = run_detrain(
      "predict model=" + weights + " source=photos imgsz=320 project=elsewhere", dir.path());
  INFO(project.output);
  REQUIRE(project.exit_code == 0);
  CHECK(fs::exists(dir.file("elsewhere/predict/predictions.json")));
  // -o OUT still writes exactly there.
  const auto out =
      run_detrain("predict -w " + weights + " -s photos imgsz=320 -o mine", dir.path());
  INFO(out.output);
  REQUIRE(out.exit_code == 0);
  CHECK(fs::exists(dir.file("mine/predictions.json")));
  CHECK_FALSE(fs::exists(dir.file("runs/predict3")));
}

TEST_CASE("predict refuses what it cannot honour, saying why", "[smoke][cli][predict]") {
  test::TempDir dir("predict-refusals");
  test::write_text(dir.file("photos/readme.txt"), "no images here\n");
  struct Case {
    std::string args;
    int code;
    std::string says;
  };
  const int usage = static_cast<int>(ExitCode::kUsage);
  const int config = static_cast<int>(ExitCode::kConfig);
  for (const Case& c : std::vector<Case>{
           // No source at all, and two that disagree.
           {"predict -w best.pt", usage, "source=SOURCE"},
           {"predict -w best.pt -s a source=b", usage, "-s a and source=b disagree"},
           {"predict -w best.pt source=a --no-draw save=True", usage, "--no-draw and save=true"},
           // A folder named twice.
           {"predict -w best.pt source=photos -o out name=exp", usage,
            "-o out names the folder; project=, name= and exist_ok="},
           // Flat arguments predict does not read: refused with the reason.
           {"predict -w best.pt source=photos epochs=3", config,
            "`epochs` (Ultralytics) changes nothing in `detrain predict`"},
           {"predict -w best.pt source=photos workers=4", config, "decodes the next image"},
           {"predict -w best.pt source=photos batch=8", config, "one image at a time"},
           {"predict -w best.pt source=photos stream_buffer=True", config, "video"},
           {"predict -w best.pt source=photos save_crop=True", config, "not supported yet"},
           {"predict -w best.pt source=photos half=True", config, "did you mean `quantize`?"},
           // (resume=True is train.resume=auto; a path is --resume's, said so.)
           {"train resume=runs/train/weights/last.pt", config,
            "detrain train --resume runs/train/weights/last.pt"},
       }) {
    const auto r = run_detrain(c.args, dir.path());
    INFO(c.args << "\n" << r.output);
    CHECK(r.exit_code == c.code);
    CHECK(contains(r.output, c.says));
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);  // one line
  }
  // Nothing was created for a refused line.
  CHECK_FALSE(fs::exists(dir.file("runs")));
}
