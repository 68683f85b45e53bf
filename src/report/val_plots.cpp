// See val_plots.h. Similarities are computed in original-image pixels on the CPU in doubles;
// the sets are one image's (tens of boxes), so plain loops are fast enough.
#include "report/val_plots.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "infer/confusion_matrix.h"
#include "infer/postprocess.h"
#include "report/batch_plots.h"

namespace detrain::report {

namespace fs = std::filesystem;

namespace {

constexpr double kCurveIou = 0.5;
constexpr int kGrid = 1000;

struct Instances {  // one image's boxes (original pixels)
  std::vector<std::array<double, 4>> boxes;
  std::vector<int> classes;
  std::vector<double> scores;     // detections only
  std::vector<double> keypoints;  // [N, K, 3]
};

// The reference's kpt_iou: truths' labelled keypoints, area = 0.53 * box area.
double keypoint_oks(const Instances& gt, size_t i, const Instances& det, size_t j,
                    const std::vector<double>& sigmas) {
  const size_t k = sigmas.size();
  const auto& b = gt.boxes[i];
  const double area = (b[2] - b[0]) * (b[3] - b[1]) * 0.53;
  double sum = 0;
  int labelled = 0;
  for (size_t p = 0; p < k; ++p) {
    if (gt.keypoints[(i * k + p) * 3 + 2] <= 0) continue;
    const double dx = gt.keypoints[(i * k + p) * 3] - det.keypoints[(j * k + p) * 3];
    const double dy = gt.keypoints[(i * k + p) * 3 + 1] - det.keypoints[(j * k + p) * 3 + 1];
    const double e = (dx * dx + dy * dy) / (std::pow(2 * sigmas[p], 2) * (area + 1e-7) * 2);
    sum += std::exp(-e);
    ++labelled;
  }
  return labelled ? sum / labelled : 0.0;
}

Instances truths_of(const data::ImageRecord& r) {
  Instances t;
  for (size_t n = 0; n < r.boxes_xyxy_px.size(); ++n) {
    const auto& b = r.boxes_xyxy_px[n];
    t.boxes.push_back({b[0], b[1], b[2], b[3]});
    t.classes.push_back(r.classes[n]);
  }
  t.keypoints.assign(r.keypoints_px.begin(), r.keypoints_px.end());
  return t;
}

Instances detections_of(const infer::ImageDetections& d) {
  const infer::DetectionArrays a = infer::to_arrays(d);
  Instances out;
  for (size_t n = 0; n < a.size(); ++n) {
    const auto& b = a.boxes_xyxy[n];
    out.boxes.push_back({b[0], b[1], b[2], b[3]});
    out.scores.push_back(a.scores[n]);
    out.classes.push_back(static_cast<int>(a.classes[n]));
  }
  out.keypoints.assign(a.keypoints.begin(), a.keypoints.end());
  return out;
}

// np.interp: y at x on the increasing grid (xp, fp), clamped to the end values.
double interp(double x, const std::vector<double>& xp, const std::vector<double>& fp) {
  if (xp.empty()) return 0;
  if (x <= xp.front()) return fp.front();
  if (x >= xp.back()) return fp.back();
  const size_t i = std::upper_bound(xp.begin(), xp.end(), x) - xp.begin();
  const double t = (x - xp[i - 1]) / (xp[i] - xp[i - 1] + 1e-300);
  return fp[i - 1] + t * (fp[i] - fp[i - 1]);
}

}  // namespace

std::vector<int> match_greedy(const std::vector<std::vector<double>>& similarity,
                              double threshold) {
  struct Pair {
    double value;
    size_t truth, det;
  };
  std::vector<Pair> pairs;
  size_t dets = 0;
  for (size_t i = 0; i < similarity.size(); ++i) {
    dets = std::max(dets, similarity[i].size());
    for (size_t j = 0; j < similarity[i].size(); ++j)
      if (similarity[i][j] >= threshold) pairs.push_back({similarity[i][j], i, j});
  }
  std::stable_sort(pairs.begin(), pairs.end(),
                   [](const Pair& a, const Pair& b) { return a.value > b.value; });
  std::vector<int> match(dets, -1);
  std::vector<bool> truth_used(similarity.size(), false);
  for (const Pair& p : pairs) {
    if (match[p.det] >= 0 || truth_used[p.truth]) continue;
    match[p.det] = static_cast<int>(p.truth);
    truth_used[p.truth] = true;
  }
  return match;
}

ClassCurves class_curves(const std::vector<double>& scores, const std::vector<int>& classes,
                         const std::vector<bool>& tp, const std::vector<int64_t>& truths) {
  ClassCurves out;
  for (int i = 0; i < kGrid; ++i) out.confidence.push_back(i / double(kGrid - 1));
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  for (size_t c = 0; c < truths.size(); ++c) {
    if (truths[c] == 0) continue;
    // Cumulative precision and recall in descending confidence, as functions of -confidence.
    std::vector<double> neg_conf, precision, recall;
    double tpc = 0, fpc = 0;
    for (size_t i : order) {
      if (classes[i] != static_cast<int>(c)) continue;
      (tp[i] ? tpc : fpc) += 1;
      neg_conf.push_back(-scores[i]);
      recall.push_back(tpc / (truths[c] + 1e-16));
      precision.push_back(tpc / (tpc + fpc));
    }
    std::vector<double> p(kGrid), r(kGrid), f1(kGrid), pr(kGrid);
    if (neg_conf.empty()) {  // never detected: zero curves and AP, as the reference leaves them
      for (auto* rows : {&out.p, &out.r, &out.f1, &out.pr}) rows->push_back(p);
      out.ap50.push_back(0.0);
      out.classes.push_back(static_cast<int>(c));
      continue;
    }
    for (int i = 0; i < kGrid; ++i) {
      const double x = -out.confidence[i];
      // Above the highest score nothing is detected: recall 0, precision 1 (the reference's
      // left values).
      const bool none = neg_conf.empty() || x < neg_conf.front();
      r[i] = none ? 0.0 : interp(x, neg_conf, recall);
      p[i] = none ? 1.0 : interp(x, neg_conf, precision);
      f1[i] = 2 * p[i] * r[i] / (p[i] + r[i] + 1e-16);
    }
    // Precision envelope over recall (compute_ap), then AP50 by 101-point interpolation.
    std::vector<double> mrec{0.0}, mpre{1.0};
    mrec.insert(mrec.end(), recall.begin(), recall.end());
    mpre.insert(mpre.end(), precision.begin(), precision.end());
    mrec.push_back(1.0);
    mpre.push_back(0.0);
    for (size_t i = mpre.size() - 1; i > 0; --i) mpre[i - 1] = std::max(mpre[i - 1], mpre[i]);
    double ap = 0;
    for (int i = 0; i <= 100; ++i) {
      const double x0 = (i - 1) / 100.0, x1 = i / 100.0;
      if (i > 0) ap += (x1 - x0) * (interp(x0, mrec, mpre) + interp(x1, mrec, mpre)) / 2;
    }
    for (int i = 0; i < kGrid; ++i) pr[i] = interp(out.confidence[i], mrec, mpre);
    out.p.push_back(std::move(p));
    out.r.push_back(std::move(r));
    out.f1.push_back(std::move(f1));
    out.pr.push_back(std::move(pr));
    out.ap50.push_back(ap);
    out.classes.push_back(static_cast<int>(c));
  }
  return out;
}

ValPlots::ValPlots(const data::DatasetInfo& dataset, const std::vector<data::ImageRecord>& records,
                   std::string dir, int64_t plot_batches, double conf)
    : dataset_(dataset),
      dir_(std::move(dir)),
      plot_batches_(plot_batches),
      nc_(dataset.nc()),
      confusion_(dataset.nc(), conf),
      truths_per_class_(static_cast<size_t>(dataset.nc()), 0) {
  for (const auto& r : records) by_id_[r.image_id] = &r;
}

void ValPlots::add(int64_t batch_index, const infer::ValBatch& batch,
                   const std::vector<infer::ImageDetections>& detections) {
  std::vector<const data::ImageRecord*> batch_records;
  std::vector<std::string> titles;
  for (size_t i = 0; i < detections.size() && i < batch.frames.size(); ++i) {
    const auto it = by_id_.find(batch.frames[i].image_id);
    const data::ImageRecord* record = it == by_id_.end() ? nullptr : it->second;
    batch_records.push_back(record);
    titles.push_back(record ? fs::path(record->file).filename().string() : "");
    if (!record) continue;
    const Instances gt = truths_of(*record);
    const Instances det = detections_of(infer::to_original_pixels(detections[i], batch.frames[i]));
    for (int c : gt.classes)
      if (c >= 0 && c < nc_) ++truths_per_class_[static_cast<size_t>(c)];

    confusion_.add(gt.boxes, gt.classes, det.boxes, det.scores, det.classes);

    // Curves: every detection, class-aware match at IoU 0.5 (and OKS 0.5 for pose).
    auto pool = [&](Pooled& into, auto&& similarity_of) {
      std::vector<std::vector<double>> sim(gt.boxes.size(),
                                           std::vector<double>(det.boxes.size(), 0.0));
      for (size_t g = 0; g < gt.boxes.size(); ++g)
        for (size_t j = 0; j < det.boxes.size(); ++j)
          if (gt.classes[g] == det.classes[j]) sim[g][j] = similarity_of(g, j);
      const std::vector<int> m = match_greedy(sim, kCurveIou);
      for (size_t j = 0; j < det.boxes.size(); ++j) {
        into.scores.push_back(det.scores[j]);
        into.classes.push_back(det.classes[j]);
        into.tp.push_back(j < m.size() && m[j] >= 0);
      }
    };
    pool(box_, [&](size_t g, size_t j) { return infer::box_iou(gt.boxes[g], det.boxes[j]); });
    if (dataset_.has_keypoints() && !det.keypoints.empty() && !gt.keypoints.empty())
      pool(pose_,
           [&](size_t g, size_t j) { return keypoint_oks(gt, g, det, j, dataset_.oks_sigmas); });
  }
  if (batch_index < plot_batches_) {
    const std::string stem =
        (fs::path(dir_) / ("val_batch" + std::to_string(batch_index))).string();
    save_val_labels_plot(batch, batch_records, dataset_, stem + "_labels.jpg");
    save_val_prediction_plot(batch, detections, dataset_, titles, stem + "_pred.jpg");
  }
}

CurveChart coco_pr_chart(const eval::CocoEvalResult& r, const std::string& title,
                         const std::function<std::string(int64_t)>& name_of) {
  CurveChart chart;
  chart.title = title;
  chart.x_label = "Recall";
  chart.y_label = "Precision";
  chart.xs = r.params.recall_thresholds;
  // IoU 0.5 (the first threshold of COCO's defaults); another first threshold is named.
  int t = 0;
  for (int i = 0; i < r.num_iou; ++i)
    if (std::abs(r.params.iou_thresholds[static_cast<size_t>(i)] - 0.5) < 1e-9) t = i;
  const double iou = r.num_iou > 0 ? r.params.iou_thresholds[static_cast<size_t>(t)] : 0.5;
  const int a = 0, m = r.num_max_dets - 1;
  chart.mean.assign(chart.xs.size(), 0.0);
  for (int k = 0; k < r.num_categories; ++k) {
    if (r.num_recall == 0 || r.precision_at(t, 0, k, a, m) < 0) continue;  // no ground truth
    std::vector<double> line;
    for (int i = 0; i < r.num_recall; ++i) line.push_back(r.precision_at(t, i, k, a, m));
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s %.3f",
                  name_of(r.category_ids[static_cast<size_t>(k)]).c_str(), r.category_ap(k, iou));
    chart.lines.push_back(std::move(line));
    chart.line_names.emplace_back(buf);
  }
  for (const auto& line : chart.lines)
    for (size_t i = 0; i < line.size(); ++i) chart.mean[i] += line[i] / chart.lines.size();
  double area = 0;
  for (double p : chart.mean) area += p / std::max<size_t>(chart.mean.size(), 1);
  char label[96];
  std::snprintf(label, sizeof label, "all classes %.3f AP%.0f (COCO)", area, iou * 100);
  chart.mean_label = label;
  return chart;
}

void ValPlots::save(const infer::ValidationResult& result) const { save_curves(&result); }

void ValPlots::save_curves(const infer::ValidationResult* result) const {
  save_chart(draw_confusion_matrix(confusion_.counts(), dataset_.names, false),
             (fs::path(dir_) / "confusion_matrix.png").string());
  save_chart(draw_confusion_matrix(confusion_.counts(), dataset_.names, true),
             (fs::path(dir_) / "confusion_matrix_normalized.png").string());
  auto curves = [&](const Pooled& pooled, const std::string& prefix) {
    const ClassCurves c = class_curves(pooled.scores, pooled.classes, pooled.tp, truths_per_class_);
    std::vector<std::string> names;
    for (int k : c.classes)
      names.push_back(k < static_cast<int>(dataset_.names.size()) ? dataset_.names[k]
                                                                  : std::to_string(k));
    auto mean_of = [&](const std::vector<std::vector<double>>& rows) {
      std::vector<double> m(c.confidence.size(), 0.0);
      for (const auto& row : rows)
        for (size_t i = 0; i < m.size(); ++i) m[i] += row[i] / rows.size();
      return m;
    };
    auto best = [&](const std::vector<double>& m) {
      const size_t i = std::max_element(m.begin(), m.end()) - m.begin();
      char buf[64];
      std::snprintf(buf, sizeof buf, "all classes %.2f at %.3f", m.empty() ? 0.0 : m[i],
                    m.empty() ? 0.0 : c.confidence[i]);
      return std::string(buf);
    };
    const eval::CocoEvalResult* coco = !result             ? nullptr
                                       : prefix == "Box"   ? &result->box
                                       : result->keypoints ? &*result->keypoints
                                                           : nullptr;
    CurveChart pr;
    if (coco) {
      pr = coco_pr_chart(*coco, prefix + " precision-recall", [&](int64_t id) {
        const int64_t k = dataset_.class_index(id);
        return k >= 0 && k < static_cast<int64_t>(dataset_.names.size())
                   ? dataset_.names[static_cast<size_t>(k)]
                   : std::to_string(id);
      });
    } else {
      const double map50 =
          c.ap50.empty() ? 0.0 : std::accumulate(c.ap50.begin(), c.ap50.end(), 0.0) / c.ap50.size();
      char map_text[96];
      std::snprintf(map_text, sizeof map_text, "all classes %.3f AP50 (pooled matches, not COCO)",
                    map50);
      pr = CurveChart{prefix + " precision-recall",
                      "Recall",
                      "Precision",
                      c.confidence,
                      c.pr,
                      names,
                      mean_of(c.pr),
                      map_text};
      for (size_t k = 0; k < names.size(); ++k) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "%s %.3f", names[k].c_str(), c.ap50[k]);
        pr.line_names[k] = buf;
      }
    }
    save_chart(draw_curve_chart(pr), (fs::path(dir_) / (prefix + "PR_curve.png")).string());
    const struct {
      const char* file;
      const char* label;
      const std::vector<std::vector<double>>* rows;
    } kinds[] = {{"F1_curve.png", "F1", &c.f1},
                 {"P_curve.png", "Precision", &c.p},
                 {"R_curve.png", "Recall", &c.r}};
    for (const auto& k : kinds) {
      const std::vector<double> m = mean_of(*k.rows);
      CurveChart chart{prefix + " " + k.label + "-confidence",
                       "Confidence",
                       k.label,
                       c.confidence,
                       *k.rows,
                       names,
                       m,
                       best(m)};
      save_chart(draw_curve_chart(chart), (fs::path(dir_) / (prefix + k.file)).string());
    }
  };
  curves(box_, "Box");
  if (dataset_.has_keypoints()) curves(pose_, "Pose");
}

}  // namespace detrain::report
