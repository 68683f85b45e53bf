// summarize(); see coco_summarize.h. The AP slice is flattened t-major, then recall threshold,
// then category, before filtering and summing, as numpy's s[s > -1] does.
#include "eval/coco_summarize.h"

#include <algorithm>
#include <cstdio>

#include "eval/coco_numeric.h"

namespace detrain::eval {

namespace {

int find_area(const CocoParams& params, const std::string& label) {
  for (size_t a = 0; a < params.area_ranges.size(); ++a)
    if (params.area_ranges[a].label == label) return static_cast<int>(a);
  return -1;
}

int find_max_dets(const CocoParams& params, int64_t max_dets) {
  for (size_t m = 0; m < params.max_dets.size(); ++m)
    if (params.max_dets[m] == max_dets) return static_cast<int>(m);
  return -1;
}

}  // namespace

std::vector<StatSpec> stat_specs(const CocoParams& p) {
  if (p.iou_type == IouType::kKeypoints) {
    // pycocotools' _summarizeKps: every stat at maxDets = 20 whatever params.max_dets says.
    return {{true, -1, "all", 20},    {true, 0.5, "all", 20},   {true, 0.75, "all", 20},
            {true, -1, "medium", 20}, {true, -1, "large", 20},  {false, -1, "all", 20},
            {false, 0.5, "all", 20},  {false, 0.75, "all", 20}, {false, -1, "medium", 20},
            {false, -1, "large", 20}};
  }
  const auto md = [&](size_t i) { return i < p.max_dets.size() ? p.max_dets[i] : int64_t{-1}; };
  // stats[0] is hardcoded to maxDets = 100 in pycocotools' _summarizeDets.
  return {{true, -1, "all", 100},      {true, 0.5, "all", md(2)},    {true, 0.75, "all", md(2)},
          {true, -1, "small", md(2)},  {true, -1, "medium", md(2)},  {true, -1, "large", md(2)},
          {false, -1, "all", md(0)},   {false, -1, "all", md(1)},    {false, -1, "all", md(2)},
          {false, -1, "small", md(2)}, {false, -1, "medium", md(2)}, {false, -1, "large", md(2)}};
}

std::vector<double> summarize_stats(const CocoEvalResult& r) {
  const std::vector<StatSpec> specs = stat_specs(r.params);
  const size_t T = static_cast<size_t>(r.num_iou), R = static_cast<size_t>(r.num_recall);
  const size_t K = static_cast<size_t>(r.num_categories), A = static_cast<size_t>(r.num_areas);
  const size_t M = static_cast<size_t>(r.num_max_dets);
  // The (area, maxDets) slice of each stat, -1 when pycocotools finds none.
  std::vector<int64_t> slice(specs.size(), -1);
  for (size_t i = 0; i < specs.size(); ++i) {
    const int a = find_area(r.params, specs[i].area_label);
    const int m = specs[i].max_dets < 0 ? -1 : find_max_dets(r.params, specs[i].max_dets);
    if (a >= 0 && m >= 0) slice[i] = a * static_cast<int64_t>(M) + m;
  }
  // One pass over precision in memory order gathers each AP slice flattened as (t, r, k).
  std::vector<int64_t> ap_slices;
  for (size_t i = 0; i < specs.size(); ++i)
    if (specs[i].average_precision && slice[i] >= 0 &&
        std::find(ap_slices.begin(), ap_slices.end(), slice[i]) == ap_slices.end())
      ap_slices.push_back(slice[i]);
  std::vector<std::vector<double>> gathered(ap_slices.size());
  for (auto& g : gathered) g.reserve(T * R * K);
  for (size_t trk = 0; trk < T * R * K; ++trk)
    for (size_t j = 0; j < ap_slices.size(); ++j)
      gathered[j].push_back(r.precision[trk * A * M + static_cast<size_t>(ap_slices[j])]);

  std::vector<double> stats;
  std::vector<double> values;
  for (size_t i = 0; i < specs.size(); ++i) {
    const StatSpec& spec = specs[i];
    values.clear();
    if (slice[i] >= 0) {
      const size_t am = static_cast<size_t>(slice[i]);
      const std::vector<double>* ap = nullptr;
      for (size_t j = 0; j < ap_slices.size(); ++j)
        if (spec.average_precision && ap_slices[j] == slice[i]) ap = &gathered[j];
      for (size_t t = 0; t < T; ++t) {
        if (spec.iou_threshold >= 0 && r.params.iou_thresholds[t] != spec.iou_threshold) continue;
        if (ap) {
          for (size_t rk = 0; rk < R * K; ++rk) {
            const double v = (*ap)[t * R * K + rk];
            if (v > -1) values.push_back(v);
          }
        } else {
          for (size_t k = 0; k < K; ++k) {
            const double v = r.recall[(t * K + k) * A * M + am];
            if (v > -1) values.push_back(v);
          }
        }
      }
    }
    stats.push_back(values.empty() ? -1.0 : numpy_mean(values.data(), values.size()));
  }
  return stats;
}

std::string format_stat_line(const CocoParams& p, const StatSpec& spec, double value) {
  char iou[64];
  if (spec.iou_threshold < 0) {
    if (p.iou_thresholds.empty())
      std::snprintf(iou, sizeof iou, "-");
    else
      std::snprintf(iou, sizeof iou, "%0.2f:%0.2f", p.iou_thresholds.front(),
                    p.iou_thresholds.back());
  } else {
    std::snprintf(iou, sizeof iou, "%0.2f", spec.iou_threshold);
  }
  char line[256];
  std::snprintf(line, sizeof line, " %-18s %s @[ IoU=%-9s | area=%6s | maxDets=%3lld ] = %0.3f",
                spec.average_precision ? "Average Precision" : "Average Recall",
                spec.average_precision ? "(AP)" : "(AR)", iou, spec.area_label.c_str(),
                static_cast<long long>(spec.max_dets), value);
  return line;
}

}  // namespace detrain::eval
