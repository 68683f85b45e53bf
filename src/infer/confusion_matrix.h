// The detection confusion matrix of Ultralytics 8.4.190 (utils/metrics.py ConfusionMatrix.
// process_batch as models/yolo/detect/val.py calls it), per image: detections above the
// validation conf (val.conf, strictly greater; 8.3 used a fixed 0.25) are matched to ground
// truth class-agnostically by box IoU: in descending confidence (ties in their order), each
// detection with some IoU above 0.45 (strictly) claims the truth it overlaps most among those
// not yet claimed. A matched pair counts at [predicted class][true class] (a wrong class is an
// FP and an FN at once), an unmatched truth at [background][class], an unmatched detection at
// [class][background]. Plain C++, no LibTorch.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace detrain::infer {

// IoU of two xyxy boxes in double precision; 0 when both have no area.
double box_iou(const std::array<double, 4>& a, const std::array<double, 4>& b);

class ConfusionMatrix {
 public:
  // `nc` classes plus the background row and column; `conf` the validation's threshold.
  ConfusionMatrix(int64_t nc, double conf, double iou = 0.45);

  // One image: truths and detections as xyxy boxes in the same pixels, classes in [0, nc).
  void add(const std::vector<std::array<double, 4>>& truth_boxes,
           const std::vector<int>& truth_classes,
           const std::vector<std::array<double, 4>>& det_boxes, const std::vector<double>& scores,
           const std::vector<int>& det_classes);

  // [nc + 1 predicted][nc + 1 true]; index nc is the background.
  const std::vector<std::vector<double>>& counts() const { return counts_; }
  double conf() const { return conf_; }

 private:
  int64_t nc_;
  double conf_, iou_;
  std::vector<std::vector<double>> counts_;
};

}  // namespace detrain::infer
