// The training loop end to end on a tiny generated data set: a run writes every file of its run
// directory and validates with COCO metrics; an interrupted-and-resumed run reproduces the
// uninterrupted run's weights and metrics.jsonl bit-exactly (CPU, fp32, fixed seed);
// `detrain val` on the checkpoint gives the trainer's last stats and `detrain eval` on the
// written predictions.json gives them too; bad input fails with one line and a distinct code.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ckpt/checkpoint.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "config/config.h"
#include "data/synth.h"
#include "report/metrics_log.h"
#include "report/run_dir.h"
#include "test_support.h"
#include "train/train_fixtures.h"
#include "train/trainer.h"

using namespace detrain;
using namespace detrain::train;
using namespace detrain::ckpt;
using namespace detrain::report;
using detrain::test::TempDir;
using detrain::test::tiny_overrides;
using detrain::test::tiny_synth;
namespace fs = std::filesystem;

namespace {

TrainRequest request_for(const std::vector<std::string>& overrides) {
  TrainRequest r;
  r.config = config::resolve("", overrides);
  return r;
}

std::vector<nlohmann::ordered_json> metrics_without_timing(const std::string& run_dir) {
  std::vector<nlohmann::ordered_json> out;
  for (auto& line : read_metrics_jsonl(run_paths(run_dir).metrics_jsonl))
    out.push_back(without_timing(line));
  return out;
}

}  // namespace

TEST_CASE("a short run writes its run directory and validates with COCO metrics",
          "[smoke][train]") {
  TempDir dir;
  const auto synth = tiny_synth(dir);
  auto overrides = tiny_overrides(dir, synth.detect_yaml, "smoke");
  overrides.push_back("train.plots=true");
  const TrainSummary s = run_training(request_for(overrides));
  CHECK_FALSE(s.interrupted);
  CHECK(s.epochs_completed == 2);
  CHECK(s.optimizer_steps == 4);  // 4 iterations per epoch, accumulate 2
  REQUIRE(s.box_stats.size() == 12);
  for (double v : s.box_stats) CHECK((v == -1.0 || (v >= 0.0 && v <= 1.0)));
  const RunPaths p = run_paths(s.run_dir);
  for (const auto& f : {p.args_yaml, p.train_log, p.metrics_jsonl, p.results_csv, p.results_png,
                        p.last_ckpt, p.best_ckpt, p.file("predictions.json"),
                        p.file("train_batch0.jpg"), p.file("val_batch0_pred.jpg"),
                        p.file("val_batch0_labels.jpg"), p.file("confusion_matrix.png")})
    CHECK(fs::exists(f));
  const ResultsTable table = read_results_csv(p.results_csv);
  CHECK(table.rows.size() == 2);
  CHECK(table.column("metrics/mAP50-95(B)") >= 0);
  CHECK(table.column("lr/pg7") >= 0);  // MuSGD's eight groups
  for (const char* name : {"val/box_loss", "val/cls_loss", "val/l1_loss"}) {
    REQUIRE(table.column(name) >= 0);
    for (double v : table.series(name))
      CHECK((std::isfinite(v) && v > 0));  // every epoch validates
  }
  const Checkpoint last = load_checkpoint(p.last_ckpt);
  CHECK(last.position.finished);
  CHECK(last.position.optimizer_steps == 4);
  CHECK(last.ema.size() == last.model.size());
}

TEST_CASE("an interrupted and resumed run equals the uninterrupted run bit for bit",
          "[smoke][train]") {
  // In both memory formats: a channels-last run's checkpoint is written NCHW and its state
  // (weights, EMA, momentum buffers, accumulated gradients) goes back channels-last.
  const std::string layout = GENERATE(as<std::string>(), "nchw", "nhwc");
  INFO("runtime.memory_format=" << layout);
  TempDir dir;
  const auto synth = tiny_synth(dir);
  const auto overrides = [&](const std::string& name) {
    auto o = tiny_overrides(dir, synth.detect_yaml, name);
    o.push_back("runtime.memory_format=" + layout);
    return o;
  };
  const TrainSummary full = run_training(request_for(overrides("full")));

  // Stop in the middle of epoch 2 (iteration 7 of 8 overall: between two micro-batches of
  // one accumulation), then resume from the run directory.
  TrainRequest first = request_for(overrides("split"));
  first.callbacks.should_stop = stop_after(7);
  const TrainSummary stopped = run_training(first);
  REQUIRE(stopped.interrupted);
  const Checkpoint mid = load_checkpoint(run_paths(stopped.run_dir).last_ckpt);
  CHECK(mid.position.epoch == 1);
  CHECK(mid.position.iter_in_epoch == 3);
  TrainRequest second = request_for(overrides("split"));
  second.resume = stopped.run_dir;
  const TrainSummary resumed = run_training(second);
  CHECK_FALSE(resumed.interrupted);

  const Checkpoint a = load_checkpoint(run_paths(full.run_dir).last_ckpt);
  const Checkpoint b = load_checkpoint(run_paths(resumed.run_dir).last_ckpt);
  // Bit-exact: the same operations on the same values in the same order (fp32, fixed threads).
  CHECK(detrain::test::max_difference(a.model, b.model).value == 0.0);
  CHECK(detrain::test::max_difference(a.ema, b.ema).value == 0.0);
  CHECK(a.position.optimizer_steps == b.position.optimizer_steps);
  CHECK(metrics_without_timing(full.run_dir) == metrics_without_timing(resumed.run_dir));
  CHECK(full.box_stats == resumed.box_stats);
}

TEST_CASE("detrain val and detrain eval reproduce the trainer's last validation; predict writes",
          "[smoke][train]") {
  TempDir dir;
  const auto synth = tiny_synth(dir);
  auto overrides = tiny_overrides(dir, synth.detect_yaml, "val");
  overrides.push_back("train.epochs=1");
  const TrainSummary s = run_training(request_for(overrides));
  const RunPaths p = run_paths(s.run_dir);

  const auto val = detrain::test::run_detrain("val --weights '" + p.last_ckpt + "' --json-out '" +
                                              dir.file("val.json") + "' --save-json '" +
                                              dir.file("preds.json") + "'");
  INFO(val.output);
  REQUIRE(val.exit_code == 0);
  const auto stats = nlohmann::json::parse(read_file(dir.file("val.json")));
  CHECK(stats["bbox"].get<std::vector<double>>() == s.box_stats);
  CHECK(read_file(dir.file("preds.json")) == read_file(p.file("predictions.json")));

  const auto gt = synth.root + "/annotations/instances_val.json";
  const auto ev =
      detrain::test::run_detrain("eval --gt '" + gt + "' --dt '" + p.file("predictions.json") +
                                 "' --json-out '" + dir.file("eval.json") + "'");
  INFO(ev.output);
  REQUIRE(ev.exit_code == 0);
  const auto eval_stats = nlohmann::json::parse(read_file(dir.file("eval.json")));
  CHECK(eval_stats["stats"].get<std::vector<double>>() == s.box_stats);

  // predict on the val images: one drawn image each, results whose ids index images.json.
  const auto pr = detrain::test::run_detrain("predict --weights '" + p.last_ckpt + "' --source '" +
                                             synth.root + "/images/val' --out '" +
                                             dir.file("pred") + "' val.predict_conf=0.0");
  INFO(pr.output);
  REQUIRE(pr.exit_code == 0);
  const auto images = nlohmann::json::parse(read_file(dir.file("pred/images.json")));
  CHECK(images.size() == 8);
  for (const auto& image : images)
    CHECK(fs::exists(
        dir.file("pred/" + fs::path(image["file_name"].get<std::string>()).filename().string())));
  const auto predictions = nlohmann::json::parse(read_file(dir.file("pred/predictions.json")));
  CHECK_FALSE(predictions.empty());  // conf 0 keeps every box NMS leaves (one-to-many branch)
  for (const auto& r : predictions) CHECK(r["image_id"].get<int64_t>() < 8);
}

TEST_CASE("bad training input fails with one line and a distinct exit code", "[smoke][train]") {
  TempDir dir;
  const auto synth = tiny_synth(dir);
  SECTION("missing weights file") {
    const auto r = detrain::test::run_detrain("val --weights '" + dir.file("nope.ckpt") + "'");
    CHECK(r.exit_code == static_cast<int>(ExitCode::kIo));
    CHECK(r.output.find("nope.ckpt does not exist") != std::string::npos);
  }
  SECTION("a pose model on a data set without keypoints") {
    auto overrides = tiny_overrides(dir, synth.detect_yaml, "pose");
    overrides.push_back("model.arch=models/yolo26-pose.yaml");
    CHECK_THROWS_AS(run_training(request_for(overrides)), DataError);
  }
  SECTION("an unwritable run directory") {
    auto overrides = tiny_overrides(dir, synth.detect_yaml, "x");
    overrides.push_back("train.project=/proc/detrain-cannot-write-here");
    CHECK_THROWS_AS(run_training(request_for(overrides)), IoError);
  }
  SECTION("a checkpoint of another architecture") {
    auto overrides = tiny_overrides(dir, synth.detect_yaml, "arch");
    overrides.push_back("train.epochs=1");
    const TrainSummary s = run_training(request_for(overrides));
    auto other = tiny_overrides(dir, synth.detect_yaml, "arch");
    other.push_back("model.arch=models/yolo11.yaml");
    TrainRequest r = request_for(other);
    r.resume = s.run_dir;
    CHECK_THROWS_AS(run_training(r), ModelError);
  }
}
