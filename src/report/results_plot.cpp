// results.png; see plots.h. One panel per quantity, three a row, sized for a 160 px thumbnail
// (plot_text.h): train and val of a loss share a panel, as do precision and recall, mAP50 and
// mAP50-95, and the lr groups; each series is its raw points plus a trend line.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <opencv2/imgproc.hpp>

#include "report/plot_text.h"
#include "report/plots.h"
#include "report/plots_charts.h"

namespace detrain::report {

namespace {

constexpr int kPanelWidth = 360, kPanelHeight = 320, kColumns = 3;
const cv::Scalar kWhite(255, 255, 255), kBlack(0, 0, 0), kGrey(215, 215, 215);

// 1, 2 or 5 times a power of ten, about range / target_ticks.
double nice_step(double range, int target_ticks) {
  const double raw = range / target_ticks;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / power;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * power;
}

// Enough decimals that neighbouring ticks `step` apart never print alike ("5.6510",
// "5.6515"); values below 0.001 (learning rates) in exponent form so the labels stay short.
// `top`: the largest |value| on the axis.
std::string tick_text(double v, double step, double top) {
  char buf[32];
  if (std::abs(v) < step * 1e-6) return "0";
  const int step_digits = static_cast<int>(std::floor(std::log10(step) + 1e-9));
  if (step >= 1 && std::abs(v) < 1e6) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else if (top >= 1e-3) {
    std::snprintf(buf, sizeof buf, "%.*f", std::max(0, -step_digits), v);
  } else {
    const int top_digits = static_cast<int>(std::floor(std::log10(top) + 1e-9));
    std::snprintf(buf, sizeof buf, "%.*e", std::max(0, top_digits - step_digits), v);
  }
  return buf;
}

struct Series {
  std::string name;  // legend entry
  std::vector<double> ys;
};

struct Panel {
  std::string key, title;
  std::vector<Series> series;
  bool smooth = true;  // trend lines (not for a schedule such as lr)
};

// Where a results.csv column goes: its panel's key and title, and its series' name.
struct Placement {
  std::string key, title, series;
};
Placement place(const std::string& column) {
  auto ends_with = [&](const std::string& s) {
    return column.size() >= s.size() && column.compare(column.size() - s.size(), s.size(), s) == 0;
  };
  for (const char* split : {"train/", "val/"}) {
    const std::string prefix = split;
    if (column.rfind(prefix, 0) == 0 && ends_with("_loss")) {
      const std::string loss = column.substr(prefix.size());
      return {"loss:" + loss, loss, prefix.substr(0, prefix.size() - 1)};
    }
  }
  // metrics/<name>(<kind>): P and R share a panel, mAP50 and mAP50-95 another, per kind.
  const auto open = column.rfind('(');
  if (column.rfind("metrics/", 0) == 0 && open != std::string::npos && ends_with(")")) {
    const std::string name = column.substr(8, open - 8), kind = column.substr(open);
    if (name == "precision" || name == "recall")
      return {"pr" + kind, "P, R " + kind, name == "precision" ? "P" : "R"};
    if (name.rfind("mAP", 0) == 0) return {"map" + kind, "mAP " + kind, name.substr(3)};
  }
  return {column, column, column};
}

std::vector<Panel> make_panels(const ResultsTable& table) {
  std::vector<Panel> panels;
  auto panel = [&](const std::string& key, const std::string& title) -> Panel& {
    for (auto& p : panels)
      if (p.key == key) return p;
    panels.push_back({key, title, {}, true});
    return panels.back();
  };
  for (const auto& c : table.columns) {
    if (c == "epoch" || c == "time") continue;
    std::vector<double> ys = table.series(c);
    if (c.rfind("lr/", 0) == 0) {
      // The groups differ only by warmup: one panel, one line per distinct schedule.
      Panel& lr = panel("lr", "lr");
      lr.smooth = false;
      auto same = std::find_if(lr.series.begin(), lr.series.end(),
                               [&](const Series& s) { return s.ys == ys; });
      if (same != lr.series.end())
        same->name = same->name.substr(0, same->name.find('-')) + "-" + c.substr(3);
      else
        lr.series.push_back({c.substr(3), std::move(ys)});
      continue;
    }
    // A loss the model does not have (pose val/rle_loss of a detect model) is zero throughout.
    const bool all_zero =
        !ys.empty() && std::all_of(ys.begin(), ys.end(), [](double v) { return v == 0; });
    const Placement at = place(c);
    if (all_zero && c.find("_loss") != std::string::npos) continue;
    panel(at.key, at.title).series.push_back({at.series, std::move(ys)});
  }
  return panels;
}

void draw_panel(cv::Mat& canvas, cv::Rect area, const Panel& panel,
                const std::vector<double>& xs_all) {
  const int width = canvas.cols;
  const double title_scale = legible_scale(width, kTitlePx160);
  const double tick_scale = legible_scale(width, kTickPx160);
  const cv::Size title_size = text_extent(panel.title, title_scale);
  const int title_base = area.y + 10 + title_size.height;
  draw_text(canvas, panel.title, {area.x + (area.width - title_size.width) / 2, title_base},
            title_scale, kBlack);
  // Legend: the series' names in their colours, one row under the title (when more than one).
  int plot_top = title_base + 14;
  if (panel.series.size() > 1) {
    const double legend_scale = tick_scale * 0.85;
    int total = 0;
    for (const auto& s : panel.series) total += text_extent(s.name, legend_scale).width + 18;
    int x = area.x + (area.width - total + 18) / 2;
    const int base = plot_top + text_extent("0", legend_scale).height;
    for (size_t k = 0; k < panel.series.size() && k < 8; ++k) {
      draw_text(canvas, panel.series[k].name, {x, base}, legend_scale,
                tab10_colour(static_cast<int>(k)));
      x += text_extent(panel.series[k].name, legend_scale).width + 18;
    }
    plot_top = base + 12;
  }

  // Finite points of each series; the axes span all of them.
  std::vector<std::vector<double>> xs_of(panel.series.size()), ys_of(panel.series.size());
  std::vector<double> xs, ys;
  for (size_t k = 0; k < panel.series.size(); ++k)
    for (size_t i = 0; i < panel.series[k].ys.size() && i < xs_all.size(); ++i)
      if (std::isfinite(panel.series[k].ys[i]) && std::isfinite(xs_all[i])) {
        xs_of[k].push_back(xs_all[i]);
        ys_of[k].push_back(panel.series[k].ys[i]);
        xs.push_back(xs_all[i]);
        ys.push_back(panel.series[k].ys[i]);
      }
  const int tick_h = text_extent("0", tick_scale).height;
  if (xs.empty()) {
    const cv::Size s = text_extent("no data", tick_scale);
    draw_text(canvas, "no data", {area.x + (area.width - s.width) / 2, area.y + area.height / 2},
              tick_scale, kBlack);
    return;
  }
  double x_lo = *std::min_element(xs.begin(), xs.end());
  double x_hi = *std::max_element(xs.begin(), xs.end());
  double y_lo = *std::min_element(ys.begin(), ys.end());
  double y_hi = *std::max_element(ys.begin(), ys.end());
  if (x_hi - x_lo < 1) x_hi = x_lo + 1;
  if (y_hi - y_lo < 1e-12) {
    const double pad = std::max(std::abs(y_hi) * 0.1, 1e-3);
    y_lo -= pad;
    y_hi += pad;
  }
  const double y_pad = (y_hi - y_lo) * 0.06;
  y_lo -= y_pad;
  y_hi += y_pad;

  // Tick labels first: the left margin is as wide as the widest y label. Two or three ticks.
  const double top = std::max(std::abs(y_lo), std::abs(y_hi));
  std::vector<std::pair<double, std::string>> y_ticks;
  for (int target = 2; target <= 4 && y_ticks.size() < 2; ++target) {
    y_ticks.clear();
    const double y_step = nice_step(y_hi - y_lo, target);
    for (double v = std::ceil(y_lo / y_step) * y_step; v <= y_hi; v += y_step)
      y_ticks.push_back({v, tick_text(v, y_step, top)});
  }
  int label_w = 0;
  for (const auto& tick : y_ticks)
    label_w = std::max(label_w, text_extent(tick.second, tick_scale).width);
  const cv::Rect plot(area.x + label_w + 14, plot_top, 0, 0);
  const cv::Rect box(plot.x, plot.y, area.x + area.width - 34 - plot.x,
                     area.y + area.height - tick_h - 20 - plot.y);
  auto to_px = [&](double x, double y) {
    return cv::Point2d(box.x + (x - x_lo) / (x_hi - x_lo) * box.width,
                       box.y + box.height - (y - y_lo) / (y_hi - y_lo) * box.height);
  };
  auto fixed = [](const cv::Point2d& p) {  // 4 fractional bits for cv's shift argument
    return cv::Point(static_cast<int>(std::lround(p.x * 16)),
                     static_cast<int>(std::lround(p.y * 16)));
  };
  for (const auto& [v, label] : y_ticks) {
    const int py = static_cast<int>(std::lround(to_px(x_lo, v).y));
    cv::line(canvas, {box.x, py}, {box.x + box.width, py}, kGrey, 1);
    const cv::Size s = text_extent(label, tick_scale);
    draw_text(canvas, label, {box.x - s.width - 8, py + s.height / 2}, tick_scale, kBlack);
  }
  // As many x ticks as fit with a label's width between them, at most 4.
  const int x_label_w = text_extent(tick_text(x_hi, 1, x_hi), tick_scale).width;
  double x_step = std::max(1.0, nice_step(x_hi - x_lo, 3));
  for (int target = 3; target >= 1; --target) {
    x_step = std::max(1.0, nice_step(x_hi - x_lo, target));
    if ((x_hi - x_lo) / x_step * 2 * x_label_w <= box.width) break;
  }
  for (double v = std::ceil(x_lo / x_step) * x_step; v <= x_hi + 1e-9; v += x_step) {
    const int px = static_cast<int>(std::lround(to_px(v, y_lo).x));
    cv::line(canvas, {px, box.y + box.height}, {px, box.y + box.height + 6}, kBlack, 2);
    const std::string label = tick_text(v, x_step, x_hi);
    const cv::Size s = text_extent(label, tick_scale);
    draw_text(canvas, label, {px - s.width / 2, box.y + box.height + 12 + s.height}, tick_scale,
              kBlack);
  }
  cv::rectangle(canvas, box, kBlack, 2);

  // Raw values: a line with markers; the trend: a thicker line of the same colour over it.
  for (size_t k = 0; k < panel.series.size(); ++k) {
    const auto &sx = xs_of[k], &sy = ys_of[k];
    const cv::Scalar colour = tab10_colour(static_cast<int>(k));
    const bool trend = panel.smooth && sx.size() >= 3;
    for (size_t i = 0; i + 1 < sx.size(); ++i)
      cv::line(canvas, fixed(to_px(sx[i], sy[i])), fixed(to_px(sx[i + 1], sy[i + 1])), colour,
               trend ? 1 : 3, cv::LINE_AA, 4);
    for (size_t i = 0; i < sx.size(); ++i)
      cv::circle(canvas, fixed(to_px(sx[i], sy[i])), 4 * 16, colour, cv::FILLED, cv::LINE_AA, 4);
    if (!trend) continue;
    const std::vector<double> smooth = trend_smooth(sy, 3.0);
    for (size_t i = 0; i + 1 < sx.size(); ++i)
      cv::line(canvas, fixed(to_px(sx[i], smooth[i])), fixed(to_px(sx[i + 1], smooth[i + 1])),
               colour, 4, cv::LINE_AA, 4);
  }
}

}  // namespace

cv::Mat draw_results(const ResultsTable& table) {
  const std::vector<Panel> panels = make_panels(table);
  const int n = static_cast<int>(panels.size());
  const int cols = std::max(1, std::min(kColumns, n));
  const int rows = std::max(1, (n + cols - 1) / cols);
  // The width is kColumns panels even for fewer, so that text keeps its size.
  cv::Mat canvas(rows * kPanelHeight, kColumns * kPanelWidth, CV_8UC3, kWhite);
  std::vector<double> xs = table.series("epoch");
  if (xs.empty())
    for (size_t i = 0; i < table.rows.size(); ++i) xs.push_back(static_cast<double>(i + 1));
  for (int i = 0; i < n; ++i) {
    const cv::Rect area((i % cols) * kPanelWidth, (i / cols) * kPanelHeight, kPanelWidth,
                        kPanelHeight);
    draw_panel(canvas, area, panels[i], xs);
  }
  return canvas;
}

void save_results_png(const ResultsTable& table, const std::string& path) {
  if (table.rows.empty()) return;
  save_chart(draw_results(table), path);
}

}  // namespace detrain::report
