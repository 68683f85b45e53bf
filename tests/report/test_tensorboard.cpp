// TensorBoard event files: CRC-32C and TFRecord framing against published vectors, the Event
// encoding against bytes worked out by hand from TensorBoard's event.proto and summary.proto,
// and real training runs read back by TensorBoard's own reader (EventAccumulator of tensorboard
// 2.18 in .venv-test, through tests/report/tensorboard_dump.py): every metrics.jsonl and
// results.csv scalar once at its step with its value, the config as text, the plots as images of
// their size, no event file under train.tensorboard=false, and resumed runs whose interrupted
// process wrote past its checkpoint showing each step once, with the resumed run's values.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <optional>

#include "common/atomic_file.h"
#include "common/paths.h"
#include "config/config.h"
#include "report/metrics_log.h"
#include "report/run_dir.h"
#include "report/tensorboard_events.h"
#include "report/tensorboard_log.h"
#include "report/tensorboard_summaries.h"
#include "test_support.h"
#include "train/train_fixtures.h"
#include "train/trainer.h"

using namespace detrain;
using namespace detrain::report;
using detrain::test::TempDir;
namespace fs = std::filesystem;

namespace {

// tag -> [(step, value)] in step order; NaN for a non-finite value.
using Series = std::map<std::string, std::vector<std::pair<int64_t, double>>>;

// TensorBoard's reader in the test environment, or skips (test_support.h) naming what is missing.
std::optional<std::string> tensorboard_python_or_skip() {
  const std::string python = test::test_venv() + "/bin/python";
  if (fs::exists(python) &&
      test::run_command("'" + python + "' -c 'import tensorboard'").exit_code == 0)
    return python;
  test::skip("no tensorboard in the test environment at " + test::test_venv() +
             " (run scripts/setup.sh: it installs tensorboard==2.18.0 there)");
  return std::nullopt;
}

// What TensorBoard's EventAccumulator reads from `run_dir`; images' bytes go to tmp/images.
nlohmann::json read_back(const std::string& python, const std::string& run_dir,
                         const TempDir& tmp) {
  const std::string out = tmp.file("tensorboard.json");
  fs::create_directories(tmp.file("images"));
  const auto r = test::run_command("'" + python + "' '" + source_dir() +
                                   "/tests/report/tensorboard_dump.py' '" + run_dir + "' '" + out +
                                   "' '" + tmp.file("images") + "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(read_file(out));
}

Series scalars_of(const nlohmann::json& dump) {
  Series out;
  for (const auto& [tag, points] : dump["scalars"].items())
    for (const auto& p : points)
      out[tag].emplace_back(p[0].get<int64_t>(),
                            p[1].is_null() ? std::nan("") : p[1].get<double>());
  return out;
}

// TensorBoard keeps scalars as float32; the reader returns that float exactly.
double as_stored(double v) {
  return std::isfinite(v) ? static_cast<double>(static_cast<float>(v)) : std::nan("");
}

// What the run's metrics.jsonl and results.csv say TensorBoard must show, written out here from
// their documented tag rules (README, docs/training.md) rather than through the code under test.
Series expected_scalars(const std::string& run_dir) {
  const RunPaths p = run_paths(run_dir);
  const auto rows = read_metrics_jsonl(p.metrics_jsonl);
  int64_t per_epoch = 0;  // batches per epoch: every iteration is logged (train.log_every=1)
  for (const auto& row : rows)
    per_epoch = std::max<int64_t>(per_epoch, row["iter"].get<int64_t>() + 1);
  Series out;
  auto num = [](const nlohmann::ordered_json& v) {
    return v.is_number() ? as_stored(v.get<double>()) : std::nan("");
  };
  for (const auto& row : rows) {
    const int64_t step = row["epoch"].get<int64_t>() * per_epoch + row["iter"].get<int64_t>() + 1;
    for (const auto& [key, value] : row.items()) {
      if (key == "epoch" || key == "iter") continue;
      if (key == "loss") {
        for (const auto& [name, v] : value.items())
          out["iter/" + name + "_loss"].emplace_back(step, num(v));
      } else if (key == "lr") {
        for (size_t g = 0; g < value.size(); ++g)
          out["iter/lr/pg" + std::to_string(g)].emplace_back(step, num(value[g]));
      } else {
        out[key == "step" ? "iter/optimizer_steps" : "iter/" + key].emplace_back(step, num(value));
      }
    }
  }
  const ResultsTable table = read_results_csv(p.results_csv);
  for (const auto& row : table.rows)
    for (size_t c = 1; c < table.columns.size(); ++c)  // column 0 is the epoch, the step
      out[table.columns[c]].emplace_back(static_cast<int64_t>(row[0]), as_stored(row[c]));
  return out;
}

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// Every tag of `expected` and no other, each with exactly its steps, in order, and its values.
void check_scalars(const Series& shown, const Series& expected) {
  std::vector<std::string> shown_tags, expected_tags;
  for (const auto& [tag, points] : shown) shown_tags.push_back(tag);
  for (const auto& [tag, points] : expected) expected_tags.push_back(tag);
  CHECK(shown_tags == expected_tags);
  for (const auto& [tag, want] : expected) {
    INFO(tag);
    const auto it = shown.find(tag);
    if (it == shown.end()) continue;
    const auto& got = it->second;
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("step " << want[i].first);
      CHECK(got[i].first == want[i].first);
      if (i > 0) CHECK(got[i].first > got[i - 1].first);  // unique and increasing
      CHECK(same(got[i].second, want[i].second));         // exact: float32 both ways (as_stored)
    }
  }
}

std::vector<std::string> event_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0)
      out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

train::TrainRequest request_for(const std::vector<std::string>& overrides) {
  train::TrainRequest r;
  r.config = config::resolve("", overrides);
  return r;
}

}  // namespace

TEST_CASE("CRC-32C and TFRecord framing match published vectors", "[unit][report][tensorboard]") {
  // RFC 3720 (iSCSI) appendix B.4 and the common check value of "123456789".
  CHECK(crc32c("123456789") == 0xE3069283u);
  CHECK(crc32c("") == 0u);
  CHECK(crc32c(std::string(32, '\0')) == 0x8A9136AAu);
  CHECK(crc32c(std::string(32, '\xff')) == 0x62A8AB43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending.push_back(static_cast<char>(i));
  CHECK(crc32c(ascending) == 0x46DD794Eu);
  // Masking: rotate right by 15, add 0xa282ead8 (TFRecord, tensorflow/core/lib/hash/crc32c.h).
  const uint32_t c = crc32c("123456789");
  CHECK(masked_crc32c("123456789") == ((c >> 15) | (c << 17)) + 0xa282ead8u);

  const std::string record = tfrecord("abc");
  REQUIRE(record.size() == 8 + 4 + 3 + 4);
  CHECK(record.substr(0, 8) == std::string("\x03\0\0\0\0\0\0\0", 8));  // little-endian length
  auto u32_at = [&](size_t at) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(record[at + i]);
    return v;
  };
  CHECK(u32_at(8) == masked_crc32c(record.substr(0, 8)));
  CHECK(record.substr(12, 3) == "abc");
  CHECK(u32_at(15) == masked_crc32c("abc"));
}

TEST_CASE("Events carry event.proto's and summary.proto's field numbers",
          "[unit][report][tensorboard]") {
  // Event { wall_time (1, fixed64) = 1.0, step (2, varint) = 300, session_log (7) { status START }
  // }
  const std::string start = session_start_event(1.0, 300);
  CHECK(start == std::string("\x09\0\0\0\0\0\0\xf0\x3f"
                             "\x10\xac\x02"
                             "\x3a\x02\x08\x01",
                             16));
  // Event { wall_time 0.0, file_version (3) "brain.Event:2" }: a zero step is left out.
  CHECK(file_version_event(0.0) ==
        std::string("\x09\0\0\0\0\0\0\0\0\x1a\x0d", 11) + "brain.Event:2");
  // Event { wall_time, step 1, summary (5) { value (1) { tag (1) "a", simple_value (2) 1.5f } } }
  CHECK(scalars_event(0.0, 1, {{"a", 1.5}}) ==
        std::string("\x09\0\0\0\0\0\0\0\0\x10\x01\x2a\x0a\x0a\x08\x0a\x01"
                    "a\x15\0\0\xc0\x3f",
                    23));
  // Summary.Value { tag, image (4) { height 1: 2, width 2: 3, colorspace 3: 3, encoded 4 } }
  ImageSummary image;
  image.height = 2;
  image.width = 3;
  image.colorspace = 3;
  image.encoded = "png";
  CHECK(image_event(0.0, 0, "i", image) ==
        std::string("\x09\0\0\0\0\0\0\0\0\x2a\x12\x0a\x10\x0a\x01"
                    "i\x22\x0b\x08\x02\x10\x03\x18\x03\x22\x03"
                    "png",
                    29));
}

TEST_CASE("the iteration and epoch steps share one axis and a resume start drops what is past it",
          "[unit][report][tensorboard]") {
  // 10 iterations per epoch: row (epoch 2, iter 3) is the 24th iteration.
  TempDir dir;
  TensorBoardLog log(dir.path(), 10);
  CHECK(log.iteration_step(2, 3) == 24);
  CHECK(log.iteration_step(0, 0) == 1);
  // Resumed before iteration 3 of epoch 2 (2 epochs done): its first new row is step 24.
  CHECK(resume_start_step(2, 24, 2).step == 24);
  CHECK_FALSE(resume_start_step(2, 24, 2).replay);
  // The previous process had finished epoch 3: epoch 3's point (step 3) must go too.
  CHECK(resume_start_step(2, 24, 3).step == 3);
  CHECK(resume_start_step(2, 24, 3).replay);
  CHECK(images_at_epoch(1, false));
  CHECK(images_at_epoch(8, false));
  CHECK_FALSE(images_at_epoch(6, false));
  CHECK(images_at_epoch(6, true));
}

TEST_CASE("a run's event file holds every logged scalar, the config and the plots",
          "[smoke][report][tensorboard]") {
  const auto python = tensorboard_python_or_skip();
  if (!python) return;
  TempDir dir;
  const auto synth = test::tiny_synth(dir);
  auto overrides = test::tiny_overrides(dir, synth.detect_yaml, "tb");
  overrides.push_back("train.plots=true");
  const train::TrainSummary s = train::run_training(request_for(overrides));
  REQUIRE(event_files(s.run_dir).size() == 1);

  const nlohmann::json shown = read_back(*python, s.run_dir, dir);
  const Series scalars = scalars_of(shown);
  check_scalars(scalars, expected_scalars(s.run_dir));
  // The names Ultralytics' TensorBoard callback gives the same curves.
  for (const char* tag :
       {"train/box_loss", "val/box_loss", "metrics/mAP50-95(B)", "metrics/precision(B)", "lr/pg0",
        "iter/box_loss", "iter/lr/pg0", "iter/img_s", "iter/mem_gb"})
    CHECK(scalars.count(tag) == 1);

  REQUIRE(shown["text"].contains("config"));
  REQUIRE(shown["text"]["config"].size() == 1);
  CHECK(shown["text"]["config"][0][0] == 0);
  CHECK_THAT(shown["text"]["config"][0][1].get<std::string>(), Catch::Contains("imgsz: 64"));

  // Epoch 1 (a power of two) and epoch 2 (the last) have pictures; each decodes to the size
  // its message states, and the last to the file the run left.
  const RunPaths p = run_paths(s.run_dir);
  for (const auto& [tag, file] : std::vector<std::pair<std::string, std::string>>{
           {"plots/results", "results.png"},
           {"plots/confusion_matrix", "confusion_matrix.png"},
           {"plots/BoxPR_curve", "BoxPR_curve.png"},
           {"val_batches/val_batch0_pred", "val_batch0_pred.jpg"}}) {
    INFO(tag);
    REQUIRE(shown["images"].contains(tag));
    const auto& rows = shown["images"][tag];
    REQUIRE(rows.size() == 2);
    CHECK(rows[0]["step"] == 1);
    CHECK(rows[1]["step"] == 2);
    for (const auto& row : rows) {
      const std::string bytes = read_file(row["file"].get<std::string>());
      const cv::Mat decoded =
          cv::imdecode(std::vector<uchar>(bytes.begin(), bytes.end()), cv::IMREAD_UNCHANGED);
      REQUIRE_FALSE(decoded.empty());
      CHECK(decoded.cols == row["width"].get<int>());
      CHECK(decoded.rows == row["height"].get<int>());
    }
    CHECK(read_file(rows[1]["file"].get<std::string>()) == read_file(p.file(file)));
  }

  // train.tensorboard=false: no event file at all.
  overrides.push_back("train.name=off");
  overrides.push_back("train.tensorboard=false");
  overrides.push_back("train.epochs=1");
  const train::TrainSummary off = train::run_training(request_for(overrides));
  CHECK(fs::exists(run_paths(off.run_dir).metrics_jsonl));
  CHECK(event_files(off.run_dir).empty());
}

TEST_CASE("a resumed run shows each step once with its own values, whatever the old process wrote",
          "[smoke][report][tensorboard]") {
  const auto python = tensorboard_python_or_skip();
  if (!python) return;
  TempDir dir;
  const auto synth = test::tiny_synth(dir);
  const auto overrides = test::tiny_overrides(dir, synth.detect_yaml, "crash");

  SECTION("the interrupted process logged iterations past the checkpoint it resumes from") {
    // Stop after 5 iterations (4 per epoch: the checkpoint is at epoch 2, iteration 1) and keep
    // that checkpoint; a second process runs 2 iterations more, logging them and saving a later
    // checkpoint; putting the kept one back is a crash after those iterations were logged and
    // before they were saved. The third process resumes from it and finishes.
    train::TrainRequest first = request_for(overrides);
    first.callbacks.should_stop = train::stop_after(5);
    const train::TrainSummary stopped = train::run_training(first);
    REQUIRE(stopped.interrupted);
    const RunPaths p = run_paths(stopped.run_dir);
    fs::copy_file(p.last_ckpt, dir.file("kept.ckpt"));
    train::TrainRequest second = request_for(overrides);
    second.resume = stopped.run_dir;
    second.callbacks.should_stop = train::stop_after(2);
    REQUIRE(train::run_training(second).interrupted);
    fs::copy_file(dir.file("kept.ckpt"), p.last_ckpt, fs::copy_options::overwrite_existing);
    train::TrainRequest third = request_for(overrides);
    third.resume = stopped.run_dir;
    CHECK_FALSE(train::run_training(third).interrupted);

    CHECK(event_files(p.dir).size() == 3);
    check_scalars(scalars_of(read_back(*python, p.dir, dir)), expected_scalars(p.dir));
  }

  SECTION("a resume from an older epoch checkpoint than the run had finished") {
    auto with_epochs = overrides;
    with_epochs.push_back("train.save_period=1");
    const train::TrainSummary full = train::run_training(request_for(with_epochs));
    const RunPaths p = run_paths(full.run_dir);
    REQUIRE(fs::exists(p.file("weights/epoch1.ckpt")));
    train::TrainRequest again = request_for(with_epochs);
    again.resume = p.file("weights/epoch1.ckpt");
    CHECK_FALSE(train::run_training(again).interrupted);

    CHECK(event_files(p.dir).size() == 2);
    const nlohmann::json shown = read_back(*python, p.dir, dir);
    check_scalars(scalars_of(shown), expected_scalars(p.dir));
    // The config of the run and of its resumption (at the first step it logged again).
    REQUIRE(shown["text"]["config"].size() == 2);
    CHECK(shown["text"]["config"][0][0] == 0);
    CHECK(shown["text"]["config"][1][0] == 5);
  }
}
