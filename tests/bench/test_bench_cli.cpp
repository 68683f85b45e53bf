// `detrain bench` as a user runs it: one kind's table and JSON carry the same rows, and a
// failed multi-rank `bench step` run names the log the spawned trainer wrote.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "data/synth.h"
#include "test_support.h"

using detrain::test::run_detrain;

namespace {

// The rows of `bench step --json`: the JSON array follows whatever the trainer logged (2>&1).
nlohmann::json step_rows(const std::string& output) {
  const size_t at = output.find("[\n  {");
  REQUIRE(at != std::string::npos);
  return nlohmann::json::parse(output.substr(at));
}

}  // namespace

TEST_CASE("bench model prints the same stages as a table and as JSON", "[smoke][bench]") {
  const std::string args = "bench model -m models/yolo26.yaml --imgsz 64 -r 1 runtime.threads=1";
  const auto table = run_detrain(args);
  INFO(table.output);
  REQUIRE(table.exit_code == 0);
  const auto json = run_detrain(args + " --json");
  INFO(json.output);
  REQUIRE(json.exit_code == 0);
  const auto j = nlohmann::json::parse(json.output);
  CHECK(j["imgsz"] == 64);
  REQUIRE(j["timings"].size() == 6);
  for (const auto& row : j["timings"]) {
    CHECK_THAT(table.output, Catch::Contains("\n  " + row["stage"].get<std::string>() + " "));
    CHECK(row["median_ms"].get<double>() >= row["min_ms"].get<double>());
  }
  CHECK_THAT(table.output, Catch::Contains("  stage ") && Catch::Contains("median ms"));
}

// --precision auto times what `train` would choose here, and every row names what it ran with:
// the CPU's ISA, the threads and the OpenMP wait policy (ctest sets OMP_WAIT_POLICY=PASSIVE,
// which must be reported as the user's).
TEST_CASE("bench step runs precision auto and says what it ran with", "[smoke][bench]") {
  const std::string args =
      "bench step -m models/yolo26.yaml --data data/coco-mini.yaml --imgsz 64 --batch 2 "
      "--steps 1 --warmup 0 --precision auto runtime.threads=1";
  const auto json = run_detrain(args + " --json");
  INFO(json.output);
  REQUIRE(json.exit_code == 0);
  const auto rows = step_rows(json.output);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["precision"] == "auto");
  const std::string runs_as = rows[0]["runs_as"];
  CHECK((runs_as == "bf16" || runs_as == "fp32"));
  CHECK(rows[0]["threads"] == 1);
  CHECK(!rows[0]["isa"].get<std::string>().empty());
  CHECK(rows[0]["openmp_wait"] == "OMP_WAIT_POLICY=PASSIVE (set by you)");
  const auto table = run_detrain(args);
  REQUIRE(table.exit_code == 0);
  CHECK_THAT(table.output, Catch::Contains("OpenMP wait: OMP_WAIT_POLICY=PASSIVE (set by you)") &&
                               Catch::Contains("CPU: "));
}

TEST_CASE("bench step --profile lists the heaviest operators of a step", "[smoke][bench]") {
  const auto r = run_detrain(
      "bench step -m models/yolo26.yaml --data data/coco-mini.yaml --imgsz 64 --batch 2 "
      "--steps 2 --warmup 1 --precision fp32 --profile 5 runtime.threads=1 --json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto rows = step_rows(r.output);
  REQUIRE(rows.size() == 1);
  const auto& profile = rows[0]["profile"];
  REQUIRE(profile["ops"].size() == 5);
  double previous = 1e300, shares = 0;
  bool convolution = false;
  for (const auto& op : profile["ops"]) {
    CHECK(op["self_ms_per_step"].get<double>() <= previous);
    previous = op["self_ms_per_step"].get<double>();
    shares += op["share"].get<double>();
    convolution =
        convolution || op["op"].get<std::string>().find("convolution") != std::string::npos;
  }
  CHECK(convolution);  // a conv net's step: convolutions among its five heaviest operators
  CHECK(shares <= 1.0);
  CHECK(profile["in_ops_ms_per_step"].get<double>() <= profile["span_ms_per_step"].get<double>());
  // The step the profile spans is the step the table times, within the profiler's own cost.
  CHECK(profile["span_ms_per_step"].get<double>() > 0.5 * rows[0]["min_ms"].get<double>());
}

TEST_CASE("bench step names the log of a failed multi-rank run", "[smoke][bench]") {
  const auto r = run_detrain(
      "bench step --data data/missing.yaml --steps 1 --warmup 0 --precision fp32 --nproc 2");
  INFO(r.output);
  CHECK(r.exit_code == 8);
  const auto at = r.output.find("its output is in ");
  REQUIRE(at != std::string::npos);
  std::string log = r.output.substr(at + 17);
  log = log.substr(0, log.find('\n'));
  REQUIRE(std::filesystem::exists(log));
  CHECK_THAT(detrain::read_file(log), Catch::Contains("data/missing.yaml"));
  std::filesystem::remove_all(std::filesystem::path(log).parent_path());
}

TEST_CASE("bench loader --ranks reports each rank's memory with one shared decoded copy",
          "[smoke][bench]") {
  detrain::test::TempDir dir("bench-ranks");
  detrain::data::SynthOptions o;
  o.train_images = 12;
  o.val_images = 2;
  o.min_side = 96;
  o.max_side = 160;
  o.threads = 1;
  const auto synth = detrain::data::write_synth_dataset(dir.file("synth"), o);
  const auto r = run_detrain("bench loader --data " + synth.detect_yaml +
                             " --imgsz 128 --batch 4 --workers 1 --repeats 1 --epochs 1 "
                             "--ranks 2 --json data.cache=ram runtime.threads=1");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  const auto& ranks = j["ranks"];
  REQUIRE(ranks["side_by_side"].size() == 2);
  CHECK(ranks["alone"]["pss"].get<double>() > 0);
  for (const auto& m : ranks["side_by_side"]) {
    CHECK(m["pss"].get<double>() > 0);
    CHECK(m["pss"].get<double>() < m["rss"].get<double>());  // pages shared between the two
  }
}
