// See epoch_record.h.
#include "train/epoch_record.h"

#include <cmath>

#include "common/progress.h"
#include "eval/coco_eval.h"
#include "infer/class_table.h"

namespace detrain::train {

namespace {

constexpr const char* kMetricNames[] = {"precision", "recall", "mAP50", "mAP50-95"};
constexpr const char* kMetricLabels[] = {"P", "R", "mAP50", "mAP50-95"};

std::string loss_column(const char* split, const std::string& name) {
  return std::string(split) + "/" + name + "_loss";
}

void add_metrics(std::vector<std::pair<std::string, double>>& cells, const char* kind,
                 const std::optional<CurveMetrics>& m) {
  const double nan = std::nan("");
  const double values[] = {m ? m->precision : nan, m ? m->recall : nan, m ? m->map50 : nan,
                           m ? m->map50_95 : nan};
  for (int i = 0; i < 4; ++i)
    cells.emplace_back(std::string("metrics/") + kMetricNames[i] + "(" + kind + ")", values[i]);
}

std::string number(double v) { return std::isfinite(v) ? fixed(v, 3) : "-"; }

}  // namespace

CurveMetrics curve_metrics(const eval::CocoEvalResult& r) {
  double p_sum = 0, r_sum = 0;
  int n = 0;
  const int a = 0, m = r.num_max_dets - 1;
  for (int k = 0; k < r.num_categories; ++k) {
    if (r.recall_at(0, k, a, m) < 0) continue;  // no GT in this category
    const auto [best_p, best_r] = infer::best_f1_point(r, k);
    p_sum += best_p;
    r_sum += best_r;
    ++n;
  }
  CurveMetrics out;
  if (n) {
    out.precision = p_sum / n;
    out.recall = r_sum / n;
  }
  out.map50 = r.stats[1];
  out.map50_95 = r.stats[0];
  return out;
}

std::vector<std::pair<std::string, double>> EpochRecord::cells() const {
  const double nan = std::nan("");
  std::vector<std::pair<std::string, double>> cells = {{"epoch", static_cast<double>(epoch)},
                                                       {"time", seconds}};
  for (size_t i = 0; i < loss_names.size(); ++i)
    cells.emplace_back(loss_column("train", loss_names[i]),
                       i < train_losses.size() ? train_losses[i] : nan);
  add_metrics(cells, "B", box);
  if (pose) add_metrics(cells, "P", keypoints);
  for (size_t i = 0; i < loss_names.size(); ++i)
    cells.emplace_back(loss_column("val", loss_names[i]),
                       i < val_losses.size() ? val_losses[i] : nan);
  for (size_t g = 0; g < lrs.size(); ++g) cells.emplace_back("lr/pg" + std::to_string(g), lrs[g]);
  return cells;
}

std::vector<double> EpochRecord::values() const {
  std::vector<double> out;
  for (const auto& [name, value] : cells()) out.push_back(value);
  return out;
}

std::vector<std::string> results_columns(const std::vector<std::string>& loss_names, bool pose,
                                         int lr_groups) {
  EpochRecord shape;
  shape.loss_names = loss_names;
  shape.pose = pose;
  shape.lrs.assign(static_cast<size_t>(lr_groups), 0.0);
  std::vector<std::string> columns;
  for (const auto& [name, value] : shape.cells()) columns.push_back(name);
  return columns;
}

std::string epoch_line(const EpochRecord& record, int64_t epochs) {
  std::string line = "epoch " + std::to_string(record.epoch) + "/" + std::to_string(epochs);
  std::string current_kind;
  bool val_started = false;
  for (const auto& [name, value] : record.cells()) {
    if (name.rfind("metrics/", 0) == 0) {
      const auto open = name.find('(');
      const std::string metric = name.substr(8, open - 8);
      const std::string kind =
          name.substr(open + 1, name.size() - open - 2) == "B" ? "box" : "pose";
      if (kind != current_kind) {
        line += "  " + kind;
        current_kind = kind;
      }
      for (int i = 0; i < 4; ++i)
        if (metric == kMetricNames[i]) line += std::string(" ") + kMetricLabels[i];
      line += " " + number(value);
    } else if (name.rfind("val/", 0) == 0) {
      if (!val_started) line += "  val loss";
      val_started = true;
      line += " " + name.substr(4, name.size() - 4 - 5) + " " + number(value);
    }
  }
  return line;
}

}  // namespace detrain::train
