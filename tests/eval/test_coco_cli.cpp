// `detrain eval` and `detrain bench eval` as a user runs them: summary lines, the stats JSON,
// the per-class table, and one-line errors with the right exit codes for bad inputs (the
// messages themselves are covered by the library tests; each run here pays the binary's start).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "bench/eval.h"
#include "coco_test_cases.h"
#include "common/atomic_file.h"
#include "test_support.h"

using detrain::test::run_detrain;

namespace {

struct Files {
  detrain::test::TempDir dir{"detrain-eval-cli"};
  std::string gt, results;
  explicit Files(const detrain::test::EvalCase& c) {
    gt = dir.file("gt.json");
    results = dir.file("results.json");
    detrain::test::write_text(gt, c.gt_json);
    detrain::test::write_text(results, c.results_json);
  }
};

}  // namespace

TEST_CASE("coco cli prints the summary and writes stats json", "[smoke][eval]") {
  const auto c = detrain::test::quirks_bbox_case(true);
  Files files(c);
  const std::string out = files.dir.file("out/stats.json");
  const auto run = run_detrain("eval --gt " + files.gt + " --dt " + files.results + " --json-out " +
                               out + " --per-class --threads 1");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(run.output.find(
            " Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.616") !=
        std::string::npos);
  CHECK(
      run.output.find(" Average Recall     (AR) @[ IoU=0.50:0.95 | area= large | maxDets=100 ]") !=
      std::string::npos);
  CHECK(run.output.find("1 results have a category id that is not in the ground truth (e.g. 99)") !=
        std::string::npos);
  CHECK(run.output.find("bird") != std::string::npos);  // the per-class table

  const auto stats = nlohmann::json::parse(detrain::read_file(out));
  const auto expected = detrain::test::run_case(c);
  CHECK(stats["iou_type"] == "bbox");
  REQUIRE(stats["stats"].size() == 12);
  for (size_t i = 0; i < 12; ++i) CHECK(stats["stats"][i].get<double>() == expected.stats[i]);
  CHECK(stats["per_category_ap"]["3"].get<double>() == -1.0);  // bird has no GT
  CHECK(stats["per_category_ap"]["1"].get<double>() == expected.category_ap(0));
  CHECK(stats["timing_s"].contains("evaluate"));
  CHECK(stats["counts"]["dropped_unknown_category"] == 1);
}

TEST_CASE("coco cli keypoints and empty results", "[smoke][eval]") {
  const auto c = detrain::test::quirks_keypoints_case(false);
  Files files(c);
  const auto run =
      run_detrain("eval --gt " + files.gt + " --dt " + files.results + " --iou-type keypoints");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(run.output.find("maxDets= 20 ] = 0.460") != std::string::npos);

  detrain::test::write_text(files.results, "[]");
  const auto empty = run_detrain("eval --gt " + files.gt + " --dt " + files.results);
  INFO(empty.output);
  REQUIRE(empty.exit_code == 0);
  CHECK(empty.output.find("holds no results") != std::string::npos);
  CHECK(empty.output.find("area=   all | maxDets=100 ] = 0.000") != std::string::npos);
}

TEST_CASE("coco cli reports bad inputs in one line", "[smoke][eval]") {
  const auto c = detrain::test::quirks_bbox_case(true);
  Files files(c);
  const std::string base = "eval --gt " + files.gt + " --dt " + files.results;

  detrain::test::write_text(
      files.results, R"([{"image_id": 5, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 1}])");
  auto run = run_detrain(base);
  CHECK(run.exit_code == 4);
  CHECK(run.output.find("has image_id 5, which is not an image of the ground truth") !=
        std::string::npos);

  run = run_detrain(base + " --iou-type keypoints --no-cats");
  CHECK(run.exit_code == 3);
  CHECK(run.output.find("use_cats off is refused") != std::string::npos);

  run = run_detrain("eval --gt " + files.dir.file("missing.json") + " --dt " + files.results);
  CHECK(run.exit_code == 5);
  CHECK(run.output.find("missing.json") != std::string::npos);

  // A device never ends: refused at once instead of read until memory runs out.
  run = run_detrain("eval --gt " + files.gt + " --dt /dev/zero");
  CHECK(run.exit_code == 5);
  CHECK_THAT(run.output, Catch::Contains("cannot read /dev/zero: not a regular file"));
  // 1e999 overflows to inf, refused like the NaN and Infinity literals.
  detrain::test::write_text(
      files.results,
      R"([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 1e999}])");
  run = run_detrain(base);
  CHECK(run.exit_code == 4);
  CHECK_THAT(run.output, Catch::Contains("result 0 'score' overflows a double (+inf)"));
  // maxDets 0 keeps nothing; every row would read -1.
  run = run_detrain(base + " --max-dets 0");
  CHECK(run.exit_code == 3);
  CHECK_THAT(run.output, Catch::Contains("max_dets (--max-dets) must be >= 1, found 0"));
}

TEST_CASE("coco bench runs a small case", "[smoke][eval]") {
  detrain::test::TempDir dir("detrain-bench-eval");
  const auto run = run_detrain(
      "bench eval --images 30 --cats 5 --dets-per-image 20 --repeat 1 "
      "--json --write-json " +
      dir.path());
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const auto report = nlohmann::json::parse(run.output.substr(run.output.find('{')));
  CHECK(report["detections"] == 600);
  CHECK(report["seconds"]["evaluate"]["wall"].get<double>() >= 0);
  CHECK(report["stats"].size() == 12);
  CHECK(!detrain::read_file(dir.file("results.json")).empty());
}

TEST_CASE("coco bench times whole processes beside the steps", "[smoke][eval]") {
  const auto run = run_detrain(
      "bench eval --images 30 --cats 5 --dets-per-image 20 --repeat 2 --threads 2 --json");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const auto report = nlohmann::json::parse(run.output.substr(run.output.find('{')));
  CHECK(report["evaluator_peak_rss_growth_bytes"].get<int64_t>() > 0);
  const auto& processes = report["processes"];
  REQUIRE(processes.size() == 3);  // detrain eval, hotcoco, faster-coco-eval
  CHECK(processes[0]["name"] == "detrain eval");
  CHECK(processes[0]["stats"] == "equal");  // the same evaluator as a process
  CHECK(processes[0]["process_wall_s"].get<double>() > 0);
  CHECK(processes[0]["peak_rss_bytes"].get<int64_t>() > 0);
  // The references appear when the reference Python has them (scripts/setup.sh), else say why.
  for (size_t i = 1; i < processes.size(); ++i)
    CHECK((processes[i].contains("skipped") || processes[i]["process_wall_s"].get<double>() > 0));
  // With hotcoco there, the two processes alternate and every round gives its own ratio.
  if (!processes[1].contains("skipped")) {
    const auto& per_round = report["hotcoco_over_detrain_per_round"];
    REQUIRE(per_round["wall"].size() == 2);
    REQUIRE(per_round["cpu"].size() == 2);
    for (const auto& ratio : per_round["wall"]) CHECK(ratio.get<double>() > 0);
  }
}

TEST_CASE("coco bench generates a keypoint case", "[smoke][eval]") {
  detrain::bench::EvalBenchOptions options;
  options.gt.images = 40;
  options.iou_type = "keypoints";
  options.repeat = 1;
  options.processes = false;  // this test binary is no `detrain eval`
  const auto report = detrain::bench::bench_eval(options);
  CHECK(report.head["iou_type"] == "keypoints");
  CHECK(report.head["categories"] == 1);
  CHECK(report.head["detections"] == 40 * 20);  // maxDets for keypoints is 20
  const auto& stats = report.tail["stats"];
  REQUIRE(stats.size() == 10);
  CHECK(stats[0].get<double>() > 0.05);  // jittered hits on most people: AP well above 0
  CHECK(stats[0].get<double>() < 1.0);
}
