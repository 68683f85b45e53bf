// metrics.jsonl and results.csv: line format (NaN as null), crash-cut lines, truncation to a
// resume point, reference column names, exact CSV round trip and resume.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "report/metrics_log.h"
#include "test_support.h"
#include "train/epoch_record.h"

using namespace detrain;
using namespace detrain::train;
using namespace detrain::report;
using detrain::test::TempDir;

namespace {
StepRecord record(int64_t epoch, int64_t iter, double box) {
  StepRecord r;
  r.epoch = epoch;
  r.iter = iter;
  r.optimizer_steps = epoch * 10 + iter / 4;
  r.losses = {{"box", box}, {"cls", 0.5}, {"dfl", 1.25}};
  r.lr = {0.01, 0.02};
  r.instances = 12;
  r.imgsz = 640;
  r.images_per_s = 33.5;
  r.data_wait_ms = 1.5;
  r.step_ms = 480.25;
  r.memory_gb = 1.75;
  return r;
}
}  // namespace

TEST_CASE("metrics.jsonl lines hold every field and NaN as null", "[unit][train]") {
  StepRecord r = record(2, 7, 0.1);
  r.losses[1].second = std::nan("");
  CHECK(step_record_line(r) ==
        R"({"epoch":2,"iter":7,"step":21,"loss":{"box":0.1,"cls":null,"dfl":1.25},)"
        R"("lr":[0.01,0.02],"instances":12,"imgsz":640,"img_s":33.5,"data_ms":1.5,)"
        R"("step_ms":480.25,"mem_gb":1.75})");
  const auto stripped = without_timing(nlohmann::ordered_json::parse(step_record_line(r)));
  CHECK(stripped.dump() ==
        R"({"epoch":2,"iter":7,"step":21,"loss":{"box":0.1,"cls":null,"dfl":1.25},)"
        R"("lr":[0.01,0.02],"instances":12,"imgsz":640})");
}

TEST_CASE("metrics.jsonl appends lines and truncates to a resume point", "[unit][train]") {
  TempDir dir;
  const std::string path = dir.file("metrics.jsonl");
  {
    MetricsJsonl log(path);
    for (int64_t e = 0; e < 2; ++e)
      for (int64_t i = 0; i < 5; ++i) log.append(record(e, i, 0.1 * (e * 5 + i)));
  }
  // A crash mid-write leaves a cut last line.
  {
    std::ofstream out(path, std::ios::app);
    out << R"({"epoch":2,"iter":0,"loss":{"bo)";
  }
  auto lines = read_metrics_jsonl(path);
  REQUIRE(lines.size() == 10);  // the cut line is ignored
  CHECK(lines[7]["epoch"] == 1);
  CHECK(lines[7]["iter"] == 2);
  CHECK(lines[7]["loss"]["box"].get<double>() == 0.1 * 7);  // shortest round trip is exact

  // Resume at epoch 1, iteration 3: lines (1, 0..2) and all of epoch 0 stay.
  truncate_metrics_jsonl(path, 1, 3);
  lines = read_metrics_jsonl(path);
  REQUIRE(lines.size() == 8);
  CHECK(lines.back()["epoch"] == 1);
  CHECK(lines.back()["iter"] == 2);
  // Appending after the truncation continues the file as an uninterrupted run would.
  {
    MetricsJsonl log(path);
    log.append(record(1, 3, 0.8));
  }
  const std::string text = read_file(path);
  CHECK(text.back() == '\n');
  CHECK(read_metrics_jsonl(path).size() == 9);

  truncate_metrics_jsonl(dir.file("absent.jsonl"), 0, 0);  // nothing to do
  detrain::test::write_text(dir.file("bad.jsonl"), "{\"epoch\":0}\nnot json\n");
  CHECK_THROWS_AS(read_metrics_jsonl(dir.file("bad.jsonl")), IoError);
}

TEST_CASE("results.csv columns follow the reference names", "[unit][train]") {
  const auto detect = results_columns({"box", "cls", "dfl"}, false, 3);
  CHECK(detect == std::vector<std::string>{"epoch", "time", "train/box_loss", "train/cls_loss",
                                           "train/dfl_loss", "metrics/precision(B)",
                                           "metrics/recall(B)", "metrics/mAP50(B)",
                                           "metrics/mAP50-95(B)", "val/box_loss", "val/cls_loss",
                                           "val/dfl_loss", "lr/pg0", "lr/pg1", "lr/pg2"});
  const auto pose = results_columns({"box", "pose", "kobj", "cls", "dfl", "rle"}, true, 8);
  CHECK(pose.size() == 2 + 6 + 8 + 6 + 8);
  CHECK(pose[7] == "train/rle_loss");
  CHECK(pose[8] == "metrics/precision(B)");
  CHECK(pose[12] == "metrics/precision(P)");
  CHECK(pose[15] == "metrics/mAP50-95(P)");
  CHECK(pose[16] == "val/box_loss");
  CHECK(pose.back() == "lr/pg7");
}

TEST_CASE("results.csv round trip and resume keep rows exactly", "[unit][train]") {
  TempDir dir;
  const std::string path = dir.file("results.csv");
  const auto columns = results_columns({"box"}, false, 2);
  {
    ResultsCsv csv(path, columns);
    for (int e = 1; e <= 3; ++e)
      csv.append({double(e), 12.5 * e, 1.0 / 3.0 / e, 0.1, 0.2, 0.3, 0.123456789, std::nan(""),
                  0.01, 0.001 * e});
  }
  const ResultsTable table = read_results_csv(path);
  REQUIRE(table.rows.size() == 3);
  CHECK(table.columns == columns);
  CHECK(table.rows[1][2] == 1.0 / 3.0 / 2);  // exact
  CHECK(std::isnan(table.rows[2][7]));
  CHECK(table.series("time") == std::vector<double>{12.5, 25.0, 37.5});
  CHECK(table.column("nope") == -1);
  const std::string first = read_file(path);
  CHECK(first.substr(0, first.find('\n')) ==
        "epoch,time,train/box_loss,metrics/precision(B),metrics/recall(B),metrics/mAP50(B),"
        "metrics/mAP50-95(B),val/box_loss,lr/pg0,lr/pg1");

  // Resume after epoch 2: epoch 3's row is dropped, the re-run writes it again identically.
  ResultsCsv resumed = ResultsCsv::resume(path, columns, 2);
  CHECK(resumed.table().rows.size() == 2);
  resumed.append({3.0, 37.5, 1.0 / 3.0 / 3, 0.1, 0.2, 0.3, 0.123456789, std::nan(""), 0.01, 0.003});
  CHECK(read_file(path) == first);

  CHECK_THROWS_AS(ResultsCsv::resume(path, results_columns({"cls"}, false, 2), 2), IoError);
  detrain::test::write_text(dir.file("bad.csv"), "epoch,time\n1,abc\n");
  CHECK_THROWS_AS(read_results_csv(dir.file("bad.csv")), IoError);
}
