#include "infer/class_table.h"

#include <algorithm>
#include <cmath>

#include "common/progress.h"

namespace detrain::infer {

namespace {

struct ClassColumns {
  double p = 0, r = 0, map50 = 0, map = 0;
};

// The evaluator's category index of each class, -1 when it did not evaluate that category.
std::vector<int> category_index(const eval::CocoEvalResult& r,
                                const std::vector<int64_t>& category_ids) {
  std::vector<int> out;
  for (const int64_t id : category_ids) {
    const auto it = std::find(r.category_ids.begin(), r.category_ids.end(), id);
    out.push_back(it == r.category_ids.end() ? -1 : static_cast<int>(it - r.category_ids.begin()));
  }
  return out;
}

ClassColumns columns_of(const eval::CocoEvalResult& r, int k) {
  ClassColumns c;
  if (k < 0) return c;
  std::tie(c.p, c.r) = best_f1_point(r, k);
  c.map50 = std::max(0.0, r.category_ap(k, 0.5));
  c.map = std::max(0.0, r.category_ap(k));
  return c;
}

void append(std::vector<std::string>& row, const ClassColumns& c) {
  for (const double v : {c.p, c.r, c.map50, c.map}) row.push_back(fixed(v, 3));
}

}  // namespace

std::pair<double, double> best_f1_point(const eval::CocoEvalResult& r, int k) {
  const int a = 0, m = r.num_max_dets - 1;
  double best_f1 = -1, best_p = 0, best_r = 0;
  for (int i = 0; i < r.num_recall; ++i) {
    const double p = r.precision_at(0, i, k, a, m);
    const double rc = r.params.recall_thresholds[static_cast<size_t>(i)];
    if (p <= 0) continue;  // recall not reached
    const double f1 = 2 * p * rc / (p + rc + 1e-16);
    if (f1 > best_f1) {
      best_f1 = f1;
      best_p = p;
      best_r = rc;
    }
  }
  return {best_p, best_r};
}

std::string class_table(const eval::CocoEvalResult& box, const eval::CocoEvalResult* keypoints,
                        const std::vector<std::vector<int32_t>>& gt_classes,
                        const std::vector<std::string>& names,
                        const std::vector<int64_t>& category_ids) {
  const size_t nc = names.size();
  std::vector<int64_t> images(nc, 0), instances(nc, 0);
  int64_t all_instances = 0;
  for (const auto& classes : gt_classes) {
    std::vector<uint8_t> present(nc, 0);
    for (const int32_t c : classes) {
      if (c < 0 || static_cast<size_t>(c) >= nc) continue;
      ++instances[static_cast<size_t>(c)];
      present[static_cast<size_t>(c)] = 1;
      ++all_instances;
    }
    for (size_t c = 0; c < nc; ++c) images[c] += present[c];
  }
  const std::vector<int> box_k = category_index(box, category_ids);
  const std::vector<int> kpt_k =
      keypoints ? category_index(*keypoints, category_ids) : std::vector<int>();

  std::vector<std::string> header = {"class", "images",   "instances",  "P(B)",
                                     "R(B)",  "mAP50(B)", "mAP50-95(B)"};
  if (keypoints)
    for (const char* h : {"P(P)", "R(P)", "mAP50(P)", "mAP50-95(P)"}) header.push_back(h);

  // "all": class means of P and R over the classes with ground truth, COCO's mAPs.
  auto all_of = [&](const eval::CocoEvalResult& r, const std::vector<int>& ks) {
    ClassColumns all;
    int n = 0;
    for (size_t c = 0; c < nc; ++c) {
      if (instances[c] == 0 || ks[c] < 0) continue;
      const auto [p, rc] = best_f1_point(r, ks[c]);
      all.p += p;
      all.r += rc;
      ++n;
    }
    if (n > 0) {
      all.p /= n;
      all.r /= n;
    }
    all.map50 = std::max(0.0, r.stats[1]);
    all.map = std::max(0.0, r.stats[0]);
    return all;
  };
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> all = {"all", std::to_string(gt_classes.size()),
                                  std::to_string(all_instances)};
  append(all, all_of(box, box_k));
  if (keypoints) append(all, all_of(*keypoints, kpt_k));
  rows.push_back(all);
  // Ultralytics prints class rows only when there is more than one class.
  for (size_t c = 0; c < nc && nc > 1; ++c) {
    if (instances[c] == 0) continue;
    std::vector<std::string> row = {names[c], std::to_string(images[c]),
                                    std::to_string(instances[c])};
    append(row, columns_of(box, box_k[c]));
    if (keypoints) append(row, columns_of(*keypoints, kpt_k[c]));
    rows.push_back(row);
  }
  return format_table(header, rows);
}

}  // namespace detrain::infer
