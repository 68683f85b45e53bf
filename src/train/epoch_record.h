// One epoch's results as a typed record, and the one column list that renders it: the
// results.csv row (the reference's column names) and the epoch line on the console and in
// train.log both come from EpochRecord::cells(), so they cannot disagree about what a column is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace detrain::eval {
struct CocoEvalResult;
}

namespace detrain::train {

// The metrics/* columns of one kind (box "B", keypoints "P").
struct CurveMetrics {
  double precision = 0;
  double recall = 0;
  double map50 = 0;
  double map50_95 = 0;
};

// From a COCO result: per category (with ground truth) the point of its IoU-0.5
// precision/recall curve (area all, largest maxDets) with the highest F1, averaged over
// categories; mAP50 and mAP50-95 are COCO's stats[1] and stats[0]. The reference picks one
// confidence for all classes by the class-mean F1 of its own curves; this is the closest
// reading of COCO's arrays.
CurveMetrics curve_metrics(const eval::CocoEvalResult& result);

struct EpochRecord {
  int64_t epoch = 0;                    // 1-based, as results.csv writes it
  double seconds = 0;                   // training time of the epoch
  std::vector<std::string> loss_names;  // the criterion's names(), e.g. {"box", "cls", "dfl"}
  std::vector<double> train_losses;     // epoch means, in loss_names order
  bool pose = false;                    // keypoint columns exist
  std::optional<CurveMetrics> box;      // nullopt: not validated this epoch
  std::optional<CurveMetrics> keypoints;
  std::vector<double> val_losses;  // empty: not validated
  std::vector<double> lrs;         // per parameter group at the end of the epoch

  // (column, value) in results.csv order: epoch, time, train/<loss>_loss...,
  // metrics/{precision,recall,mAP50,mAP50-95}(B) (and (P) for pose), val/<loss>_loss...,
  // lr/pg0... A value that does not exist this epoch is NaN.
  std::vector<std::pair<std::string, double>> cells() const;
  std::vector<double> values() const;
};

// The results.csv header of records with these losses, kind and groups.
std::vector<std::string> results_columns(const std::vector<std::string>& loss_names, bool pose,
                                         int lr_groups);

// The plain epoch line: "epoch 3/10  box P 0.512 R 0.401 mAP50 0.455 mAP50-95 0.301  val box
// 1.234 cls 2.345 dfl 1.111" (the kinds and losses it has; "-" for a value it has not).
std::string epoch_line(const EpochRecord& record, int64_t epochs);

}  // namespace detrain::train
