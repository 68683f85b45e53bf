// See confusion_matrix.h.
#include "infer/confusion_matrix.h"

#include <algorithm>
#include <numeric>

namespace detrain::infer {

double box_iou(const std::array<double, 4>& a, const std::array<double, 4>& b) {
  const double w = std::max(0.0, std::min(a[2], b[2]) - std::max(a[0], b[0]));
  const double h = std::max(0.0, std::min(a[3], b[3]) - std::max(a[1], b[1]));
  const double inter = w * h;
  const double uni = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
  return uni > 0 ? inter / uni : 0.0;
}

ConfusionMatrix::ConfusionMatrix(int64_t nc, double conf, double iou)
    : nc_(nc),
      conf_(conf),
      iou_(iou),
      counts_(static_cast<size_t>(nc + 1), std::vector<double>(static_cast<size_t>(nc + 1), 0.0)) {}

void ConfusionMatrix::add(const std::vector<std::array<double, 4>>& truth_boxes,
                          const std::vector<int>& truth_classes,
                          const std::vector<std::array<double, 4>>& det_boxes,
                          const std::vector<double>& scores, const std::vector<int>& det_classes) {
  const auto bg = static_cast<size_t>(nc_);
  std::vector<size_t> kept;  // detections above conf, in their order
  for (size_t j = 0; j < scores.size(); ++j)
    if (scores[j] > conf_) kept.push_back(j);
  const size_t m = truth_boxes.size(), n = kept.size();
  // iou[g][k]; a claimed truth's row is zeroed, as the reference does.
  std::vector<std::vector<double>> iou(m, std::vector<double>(n, 0.0));
  for (size_t g = 0; g < m; ++g)
    for (size_t k = 0; k < n; ++k) iou[g][k] = box_iou(truth_boxes[g], det_boxes[kept[k]]);
  std::vector<size_t>
      candidates;  // detections with some IoU above the threshold (before any claim)
  for (size_t k = 0; k < n; ++k)
    for (size_t g = 0; g < m; ++g)
      if (iou[g][k] > iou_) {
        candidates.push_back(k);
        break;
      }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](size_t a, size_t b) { return scores[kept[a]] > scores[kept[b]]; });
  std::vector<int64_t> truth_match(m, -1);
  for (const size_t k : candidates) {
    size_t best = 0;  // the first maximum, as argmax
    for (size_t g = 1; g < m; ++g)
      if (iou[g][k] > iou[best][k]) best = g;
    if (!(iou[best][k] > iou_)) continue;
    truth_match[best] = static_cast<int64_t>(k);
    std::fill(iou[best].begin(), iou[best].end(), 0.0);
  }
  std::vector<bool> det_matched(n, false);
  for (size_t g = 0; g < m; ++g) {
    const auto t = static_cast<size_t>(truth_classes[g]);
    if (truth_match[g] < 0) {
      counts_[bg][t] += 1;  // missed
      continue;
    }
    const auto k = static_cast<size_t>(truth_match[g]);
    det_matched[k] = true;
    counts_[static_cast<size_t>(det_classes[kept[k]])][t] += 1;
  }
  for (size_t k = 0; k < n; ++k)
    if (!det_matched[k]) counts_[static_cast<size_t>(det_classes[kept[k]])][bg] += 1;
}

}  // namespace detrain::infer
