// `detrain data preview|stats` and `detrain bench loader` as a user runs them: files written,
// tables printed, and bad input mapped to the data / config exit codes with a one-line error.
#include <catch2/catch.hpp>
#include <filesystem>
#include <iterator>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <set>

#include "data/synth.h"
#include "test_support.h"

using namespace detrain;
using detrain::test::run_detrain;
using detrain::test::TempDir;

namespace {

data::SynthSummary small_synth(const TempDir& dir) {
  data::SynthOptions o;
  o.seed = 2;
  o.train_images = 8;
  o.val_images = 4;
  o.min_side = 96;
  o.max_side = 128;
  o.threads = 1;
  return data::write_synth_dataset(dir.file("synth"), o);
}

}  // namespace

TEST_CASE("data preview writes a grid of augmented samples", "[smoke][data][cli]") {
  TempDir dir;
  const auto synth = small_synth(dir);
  const auto r = run_detrain("data preview --data " + synth.pose_yaml + " --n 4 --out " +
                             dir.file("out/p.jpg") + " data.imgsz=128");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const cv::Mat grid = cv::imread(dir.file("out/p.jpg"));
  CHECK(grid.cols == 256);  // 2 x 2 tiles of 128 px
  CHECK(grid.rows == 256);

  const auto val = run_detrain("data preview --data " + synth.detect_yaml +
                               " --split val --n 3 --out " + dir.file("v.jpg") + " data.imgsz=128");
  INFO(val.output);
  CHECK(val.exit_code == 0);
  CHECK(std::filesystem::exists(dir.file("v.jpg")));
}

TEST_CASE("data stats prints counts and problems", "[smoke][data][cli]") {
  if (!test::shared_data_or_skip("coco-mini")) return;
  const auto r = run_detrain("data stats --data data/coco-mini.yaml --split val");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("48 images") && Catch::Contains("toothbrush") &&
                           Catch::Contains("3 crowd regions"));
}

TEST_CASE("data stats reads its records from the records cache the second time",
          "[smoke][data][cli]") {
  if (!test::shared_data_or_skip("coco-mini")) return;
  TempDir caches("records-cache-cli");
  const test::ScopedEnv cache_dir("DETRAIN_CACHE_DIR", caches.path());
  const std::string args = "data stats --data data/coco-mini.yaml --split val";
  const auto first = run_detrain(args), second = run_detrain(args),
             off = run_detrain(args + " data.cache_records=false");
  INFO(first.output << second.output << off.output);
  REQUIRE(first.exit_code == 0);
  REQUIRE(second.exit_code == 0);
  REQUIRE(off.exit_code == 0);
  CHECK_THAT(first.output, Catch::Contains("(records cache: written)"));
  CHECK_THAT(second.output, Catch::Contains("(records cache: read)"));
  CHECK_THAT(off.output, !Catch::Contains("records cache"));
  // Everything but the read time is the same.
  const auto counts = [](const std::string& out) { return out.substr(0, out.find("  read in")); };
  CHECK(counts(first.output) == counts(second.output));
  CHECK(counts(first.output) == counts(off.output));
  // One records table and one file of image-check answers (data/split_image_check.h), each
  // written once and read back, not one per run.
  CHECK(std::distance(std::filesystem::directory_iterator(caches.path()),
                      std::filesystem::directory_iterator()) == 2);
}

TEST_CASE("data commands report bad input with exit codes", "[smoke][data][cli]") {
  TempDir dir;
  const auto missing = run_detrain("data stats --data " + dir.file("none.yaml"));
  CHECK(missing.exit_code == 3);
  CHECK_THAT(missing.output, Catch::Contains("none.yaml"));

  test::write_text(dir.file("d.yaml"),
                   "path: " + dir.path() +
                       "\ntrain: {annotations: t.json, images: i}\n"
                       "val: {annotations: t.json, images: i}\nclasses: [{id: 1, name: a}]\n");
  test::write_text(dir.file("t.json"), R"({"images": [{"id": 1, "file_name": "x.jpg",)");
  const auto bad = run_detrain("data stats --data " + dir.file("d.yaml"));
  CHECK(bad.exit_code == 4);
  CHECK_THAT(bad.output, Catch::Contains("t.json") && Catch::Contains("byte"));
}

TEST_CASE("bench loader reports every worker count and a decode baseline", "[smoke][data][cli]") {
  TempDir dir;
  const auto synth = small_synth(dir);
  const auto r = run_detrain("bench loader --data " + synth.detect_yaml +
                             " --imgsz 128 --batch 4 --workers 0,2 --repeats 1 --epochs 2 --json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto json = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  std::set<int64_t> loader_workers;
  bool decode = false;
  std::set<std::string> alone;  // the stages timed alone, one row per implementation
  for (const auto& row : json["rows"]) {
    CHECK(row["cpu_ms_per_sample"].get<double>() >= 0);
    if (row["stage"] == "decode + resize only") decode = true;
    const auto stage = row["stage"].get<std::string>();
    if (stage.find(" alone, 128 px: ") != std::string::npos) {
      alone.insert(stage.substr(stage.find(": ") + 2));
      CHECK(row["ms_per_sample_per_worker"].get<double>() > 0);
    }
    if (row["stage"] == "full chain + collate (loader)") {
      loader_workers.insert(row["workers"].get<int64_t>());
      CHECK(row["samples_per_s"].get<double>() > 0);
    }
  }
  CHECK(decode);
  CHECK(alone.count("OpenCV's conversions") == 1);  // HSV, the reference's way
  CHECK(alone.count("cv::warpAffine") == 1);        // the warp, the reference's call
  CHECK(alone.count("warp_scaled portable") == 1);  // runs on every CPU
  CHECK(loader_workers == std::set<int64_t>{0, 2});
  CHECK(json["rss_bytes_per_epoch"].size() == 2);
}
