// EpochRecord: one column list renders the results.csv header, the row and the epoch line.
#include <catch2/catch.hpp>
#include <cmath>

#include "train/epoch_record.h"

using namespace detrain::train;

namespace {

EpochRecord pose_record() {
  EpochRecord r;
  r.epoch = 3;
  r.seconds = 12.5;
  r.loss_names = {"box", "pose", "cls"};
  r.train_losses = {1.5, 2.5, 3.5};
  r.pose = true;
  r.box = CurveMetrics{0.5, 0.25, 0.125, 0.0625};
  r.keypoints = CurveMetrics{0.75, 0.5, 0.25, 0.2};
  r.val_losses = {1.25, 2.25, 3.25};
  r.lrs = {0.01, 0.02};
  return r;
}

}  // namespace

TEST_CASE("an epoch record's cells follow the results.csv columns", "[unit][train][results]") {
  const EpochRecord r = pose_record();
  const auto columns = results_columns(r.loss_names, true, 2);
  const auto cells = r.cells();
  REQUIRE(cells.size() == columns.size());
  for (size_t i = 0; i < cells.size(); ++i) CHECK(cells[i].first == columns[i]);
  const std::vector<double> expected = {3,    12.5, 1.5,  2.5, 3.5,  0.5,  0.25, 0.125, 0.0625,
                                        0.75, 0.5,  0.25, 0.2, 1.25, 2.25, 3.25, 0.01,  0.02};
  CHECK(r.values() == expected);
  CHECK(columns[5] == "metrics/precision(B)");
  CHECK(columns[12] == "metrics/mAP50-95(P)");
  CHECK(columns[13] == "val/box_loss");
  CHECK(columns.back() == "lr/pg1");
}

TEST_CASE("an epoch that did not validate has NaN metrics and validation losses",
          "[unit][train][results]") {
  EpochRecord r = pose_record();
  r.box.reset();
  r.keypoints.reset();
  r.val_losses.clear();
  r.pose = false;
  const auto cells = r.cells();
  CHECK(cells.size() == results_columns(r.loss_names, false, 2).size());
  int nan = 0;
  for (const auto& [name, value] : cells)
    if (std::isnan(value)) {
      ++nan;
      CHECK((name.rfind("metrics/", 0) == 0 || name.rfind("val/", 0) == 0));
    }
  CHECK(nan == 4 + 3);  // four box metrics, three validation losses
}

TEST_CASE("the epoch line shows each kind's metrics and the validation losses",
          "[unit][train][results]") {
  CHECK(epoch_line(pose_record(), 10) ==
        "epoch 3/10  box P 0.500 R 0.250 mAP50 0.125 mAP50-95 0.062  pose P 0.750 R 0.500 mAP50 "
        "0.250 mAP50-95 0.200  val loss box 1.250 pose 2.250 cls 3.250");
}
