// The reference's validation plots, gathered while validation runs and drawn at its end:
// confusion_matrix.png and confusion_matrix_normalized.png (8.4.190's rule, infer/
// confusion_matrix.h: the validation conf, IoU 0.45, with the background row and column), the PR,
// F1, P and R curves per class with their mean (Box*, and Pose* for pose models, matched by OKS),
// and val_batch{i}_labels.jpg beside val_batch{i}_pred.jpg for the first batches (tiles titled by
// file name). The PR curves are the COCO evaluator's own (precision at IoU 0.5 over its 101 recall
// points), so their legends are the AP50 that results.csv (mAP50), the validation table and
// `detrain eval --per-class` print; the F1/P/R-confidence curves come from detections pooled
// over the data set and matched at IoU 0.5 (the reference's ap_per_class), which COCO has no
// confidence axis for.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "data/coco_records.h"
#include "data/dataset.h"
#include "infer/confusion_matrix.h"
#include "infer/validate.h"
#include "report/plots_charts.h"

namespace detrain::report {

// Matching of one class-agnostic detection set against ground truth, as the reference does:
// pairs above the threshold, best similarity first, each detection and each truth once.
// `similarity` [M truths][N detections]. Returns, per detection, the matched truth or -1.
std::vector<int> match_greedy(const std::vector<std::vector<double>>& similarity, double threshold);

// Per-class curves from detections pooled over a data set (reference ap_per_class, one IoU).
struct ClassCurves {
  std::vector<double> confidence;             // [1000] the x grid of the P, R and F1 curves
  std::vector<std::vector<double>> p, r, f1;  // [classes with truth][1000]
  std::vector<std::vector<double>> pr;        // [classes with truth][1000] precision at recall
  std::vector<double> ap50;                   // [classes with truth]
  std::vector<int> classes;                   // class index of each row
};
ClassCurves class_curves(const std::vector<double>& scores, const std::vector<int>& classes,
                         const std::vector<bool>& tp, const std::vector<int64_t>& truths_per_class);

// The PR chart of a COCO result: per category with ground truth, precision at IoU 0.5 (area
// all, the largest maxDets) against COCO's recall points, its legend "<name> <AP50>"
// (CocoEvalResult::category_ap(k, 0.5)); the mean line over those categories, whose mean over
// the recall points is stats[1], labelled with it. `name_of` names a COCO category id.
CurveChart coco_pr_chart(const eval::CocoEvalResult& result, const std::string& title,
                         const std::function<std::string(int64_t)>& name_of);

class ValPlots {
 public:
  // `records`: the split's images (ground truth by image id); files go to `dir`; `conf` is the
  // validation's (val.conf), the confusion matrix's threshold.
  ValPlots(const data::DatasetInfo& dataset, const std::vector<data::ImageRecord>& records,
           std::string dir, int64_t plot_batches, double conf);

  // The validation observer's body: one batch (network-input pixels) and its detections.
  void add(int64_t batch_index, const infer::ValBatch& batch,
           const std::vector<infer::ImageDetections>& detections);

  // Writes the confusion matrices and curves (the batch images are written by add); the PR
  // curves from `result`, the validation these batches were part of.
  void save(const infer::ValidationResult& result) const;

 private:
  struct Pooled {  // detections over the data set, for one kind of match (box or pose)
    std::vector<double> scores;
    std::vector<int> classes;
    std::vector<bool> tp;
  };
  void save_curves(const infer::ValidationResult* result) const;

  const data::DatasetInfo& dataset_;
  std::map<int64_t, const data::ImageRecord*> by_id_;
  std::string dir_;
  int64_t plot_batches_;
  int64_t nc_;
  infer::ConfusionMatrix confusion_;
  std::vector<int64_t> truths_per_class_;
  Pooled box_, pose_;
};

}  // namespace detrain::report
