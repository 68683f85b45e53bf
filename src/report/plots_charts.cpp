// See plots_charts.h. Sizes are fixed in pixels; titles, axis names and tick labels are sized
// by plot_text.h to read when a chart is shown 160 px wide (per-class legends and class names of
// large data sets cannot, and are sized to the room they have).
#include "report/plots_charts.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "report/plot_text.h"
#include "report/plots_annotate.h"

namespace detrain::report {

namespace {

const cv::Scalar kWhite(255, 255, 255), kBlack(0, 0, 0), kGrid(225, 225, 225),
    kMeanColour(255, 0, 0), kFaint(160, 160, 160);

// matplotlib's tab10, BGR.
const cv::Scalar kTab10[] = {{180, 119, 31},  {14, 127, 255}, {44, 160, 44},   {40, 39, 214},
                             {189, 103, 148}, {75, 86, 140},  {194, 119, 227}, {127, 127, 127},
                             {34, 189, 188},  {207, 190, 23}};

// matplotlib's "Blues" between its ends (t in [0, 1]), BGR.
cv::Scalar blues(double t) {
  t = std::clamp(t, 0.0, 1.0);
  const double r = 247 + (8 - 247) * t, g = 251 + (48 - 251) * t, b = 255 + (107 - 255) * t;
  return cv::Scalar(b, g, r);
}

cv::Point2i px(const cv::Rect& plot, double x, double y) {
  return {plot.x + static_cast<int>(std::lround(x * plot.width)),
          plot.y + plot.height - static_cast<int>(std::lround(y * plot.height))};
}

// Text centred on `centre_x` with its baseline at `base`.
void centred(cv::Mat& img, const std::string& s, int centre_x, int base, double scale,
             const cv::Scalar& colour = kBlack) {
  draw_text(img, s, {centre_x - text_extent(s, scale).width / 2, base}, scale, colour);
}

// Axes of a unit square plot: grid at 0.2 steps, tick labels (0, 0.2, ... 1) and axis names,
// all outside `plot`; `tick`/`label`: font scales.
void unit_axes(cv::Mat& img, const cv::Rect& plot, const std::string& x_label,
               const std::string& y_label, double tick, double label) {
  const int tick_h = text_extent("0", tick).height;
  for (int i = 0; i <= 5; ++i) {
    const double v = i / 5.0;
    const cv::Point xb = px(plot, v, 0), yl = px(plot, 0, v);
    cv::line(img, {xb.x, plot.y}, {xb.x, plot.y + plot.height}, kGrid, 2);
    cv::line(img, {plot.x, yl.y}, {plot.x + plot.width, yl.y}, kGrid, 2);
    char buf[8];
    std::snprintf(buf, sizeof buf, i == 0 ? "0" : i == 5 ? "1" : "%.1f", v);
    centred(img, buf, xb.x, plot.y + plot.height + tick_h + 12, tick);
    const cv::Size s = text_extent(buf, tick);
    draw_text(img, buf, {plot.x - s.width - 10, yl.y + s.height / 2}, tick, kBlack);
  }
  cv::rectangle(img, plot, kBlack, 2);
  const int label_h = text_extent("0", label).height;
  centred(img, x_label, plot.x + plot.width / 2, plot.y + plot.height + 2 * tick_h + label_h + 28,
          label);
  const int y_label_w = text_extent(y_label, label).width;
  const int widest_tick = text_extent("0.8", tick).width;
  draw_vertical_text(img, y_label,
                     {plot.x - widest_tick - label_h - 34, plot.y + (plot.height + y_label_w) / 2},
                     label, kBlack);
}

}  // namespace

cv::Scalar tab10_colour(int index) { return kTab10[((index % 10) + 10) % 10]; }

cv::Mat draw_curve_chart(const CurveChart& c) {
  const bool legend_per_class = !c.lines.empty() && c.lines.size() < 21;
  const int width = legend_per_class ? 1120 : 900, height = 720;
  cv::Mat img(height, width, CV_8UC3, kWhite);
  const double title = fit_scale(c.title, legible_scale(width, kTitlePx160), width - 20);
  const double label = legible_scale(width, kLabelPx160);
  const double tick = legible_scale(width, kTickPx160);
  const int title_h = text_extent("0", title).height, label_h = text_extent("0", label).height;
  const int tick_h = text_extent("0", tick).height;
  centred(img, c.title, width / 2, 14 + title_h, title);
  // The mean's legend on its own row under the title, where no curve can hide it.
  const double mean_scale = fit_scale(c.mean_label, label, width - 120);
  const int legend_base = 14 + title_h + 22 + label_h;
  const int legend_w = 56 + text_extent(c.mean_label, mean_scale).width;
  cv::Point at((width - legend_w) / 2, legend_base);
  cv::line(img, at + cv::Point(0, -label_h / 2), at + cv::Point(44, -label_h / 2), kMeanColour, 6,
           cv::LINE_AA);
  draw_text(img, c.mean_label, at + cv::Point(56, 0), mean_scale, kBlack);

  const int left = text_extent("0.8", tick).width + label_h + 56;
  const int plot_top = legend_base + 26;
  const int plot_bottom = height - (2 * tick_h + label_h + 44);
  const int plot_right = legend_per_class ? width - 300 : width - 40;
  const cv::Rect plot(left, plot_top, plot_right - left, plot_bottom - plot_top);
  unit_axes(img, plot, c.x_label, c.y_label, tick, label);
  auto draw = [&](const std::vector<double>& ys, const cv::Scalar& colour, int thickness) {
    std::vector<cv::Point> points;
    for (size_t i = 0; i < ys.size() && i < c.xs.size(); ++i)
      points.push_back(px(plot, c.xs[i], std::clamp(ys[i], 0.0, 1.0)));
    cv::polylines(img, points, false, colour, thickness, cv::LINE_AA);
  };
  for (size_t k = 0; k < c.lines.size(); ++k)
    draw(c.lines[k], legend_per_class ? tab10_colour(static_cast<int>(k)) : kFaint, 2);
  draw(c.mean, kMeanColour, 6);
  // Per-class legend (fewer than 21 classes) to the right of the plot, in the class colours.
  if (legend_per_class) {
    const int room = width - (plot.x + plot.width) - 40;
    const int rows = static_cast<int>(std::min(c.lines.size(), c.line_names.size()));
    const double name_scale =
        std::min(tick * 0.8, 0.9 * plot.height / std::max(1, rows) / text_extent("0", 1.0).height);
    // One size for every name (the one the longest fits at), so no entry looks emphasised.
    double fitted = name_scale;
    for (int k = 0; k < rows; ++k)
      fitted = std::min(fitted, fit_scale(c.line_names[k], name_scale, room - 40));
    const int step = std::max(text_extent("0", name_scale).height * 2, plot.height / 12);
    cv::Point row(plot.x + plot.width + 30, plot.y + text_extent("0", name_scale).height);
    for (int k = 0; k < rows; ++k, row.y += std::min(step, plot.height / std::max(1, rows))) {
      const int h = text_extent("0", name_scale).height;
      cv::line(img, row + cv::Point(0, -h / 2), row + cv::Point(30, -h / 2), tab10_colour(k), 4,
               cv::LINE_AA);
      draw_text(img, c.line_names[k], row + cv::Point(40, 0), fitted, kBlack);
    }
  }
  return img;
}

cv::Mat draw_confusion_matrix(const std::vector<std::vector<double>>& matrix,
                              const std::vector<std::string>& names, bool normalised) {
  const int n = static_cast<int>(matrix.size());  // nc + 1
  std::vector<std::vector<double>> values = matrix;
  if (normalised)
    for (int col = 0; col < n; ++col) {
      double sum = 0;
      for (int row = 0; row < n; ++row) sum += matrix[row][col];
      for (int row = 0; row < n; ++row) values[row][col] = matrix[row][col] / (sum + 1e-9);
    }
  double top = 1e-9;
  for (const auto& row : values) top = std::max(top, *std::max_element(row.begin(), row.end()));
  const bool show_names = n - 1 < 99;
  const bool annotate = n - 1 < 30;
  std::vector<std::string> labels;
  for (int i = 0; i < n - 1; ++i)
    labels.push_back(i < static_cast<int>(names.size()) ? names[i] : std::to_string(i));
  labels.push_back("background");

  const int width = 1200;
  const double title_scale = legible_scale(width, kTitlePx160);
  const double label = legible_scale(width, kLabelPx160);
  const double tick = legible_scale(width, kTickPx160);
  const int label_h = text_extent("0", label).height, tick_h = text_extent("0", tick).height;
  // Class names as large as the labels, or as the cells allow (up to 80% of a cell's height).
  const int side_guess = 800;
  const double name_scale =
      std::min(tick, 0.8 * side_guess / n / text_extent("0", 1.0).height * 0.75);
  int name_len = 0;
  if (show_names)
    for (const auto& l : labels) name_len = std::max(name_len, text_extent(l, name_scale).width);
  const int bar_w = 36,
            bar_room = bar_w + 30 + text_extent(normalised ? "0.00" : "000", tick).width;
  const int left = 30 + label_h + 24 + name_len + 14;
  const int side = width - left - bar_room - 40;
  const std::string title = normalised ? "Confusion matrix, normalised" : "Confusion matrix";
  const double title_fit = fit_scale(title, title_scale, width - 40);
  const int title_h = text_extent("0", title_fit).height;
  const int top_margin = 24 + title_h + 30;
  const int bottom = 14 + name_len + 24 + label_h + 30;
  cv::Mat img(top_margin + side + bottom, width, CV_8UC3, kWhite);
  const double cell = static_cast<double>(side) / n;
  // Over the matrix, or as near as the image's edges allow.
  const int title_w = text_extent(title, title_fit).width;
  const int title_x = std::clamp(left + side / 2 - title_w / 2, 20, width - 20 - title_w);
  draw_text(img, title, {title_x, 24 + title_h}, title_fit, kBlack);
  for (int row = 0; row < n; ++row)
    for (int col = 0; col < n; ++col) {
      const double v = values[row][col];
      const cv::Rect r(left + static_cast<int>(col * cell),
                       top_margin + static_cast<int>(row * cell),
                       static_cast<int>((col + 1) * cell) - static_cast<int>(col * cell),
                       static_cast<int>((row + 1) * cell) - static_cast<int>(row * cell));
      cv::rectangle(img, r, blues(v / top), cv::FILLED);
      if (!annotate || v < (normalised ? 0.005 : 0.5)) continue;
      char buf[16];
      std::snprintf(buf, sizeof buf, normalised ? "%.2f" : "%.0f", v);
      // As large as tick labels, or what fits in 80% of the cell.
      const double scale = fit_scale(normalised ? "0.00" : buf, tick, static_cast<int>(0.8 * cell));
      const cv::Size s = text_extent(buf, scale);
      draw_text(img, buf, {r.x + (r.width - s.width) / 2, r.y + (r.height + s.height) / 2}, scale,
                v / top > 0.5 ? kWhite : kBlack);
    }
  cv::rectangle(img, cv::Rect(left, top_margin, side, side), kBlack, 2);
  if (show_names)
    for (int i = 0; i < n; ++i) {
      const int centre = static_cast<int>((i + 0.5) * cell);
      const cv::Size s = text_extent(labels[i], name_scale);
      draw_text(img, labels[i], {left - s.width - 10, top_margin + centre + s.height / 2},
                name_scale, kBlack);
      draw_vertical_text(img, labels[i],
                         {left + centre - s.height / 2 - 4, top_margin + side + 10 + s.width},
                         name_scale, kBlack);
    }
  centred(img, "True", left + side / 2, top_margin + side + 14 + name_len + 24 + label_h, label);
  draw_vertical_text(img, "Predicted",
                     {24, top_margin + (side + text_extent("Predicted", label).width) / 2}, label,
                     kBlack);
  // Colour bar.
  const cv::Rect bar(left + side + 30, top_margin, bar_w, side);
  for (int y = 0; y < bar.height; ++y)
    cv::line(img, {bar.x, bar.y + y}, {bar.x + bar.width, bar.y + y},
             blues(1.0 - static_cast<double>(y) / bar.height));
  cv::rectangle(img, bar, kBlack, 2);
  char hi[16];
  std::snprintf(hi, sizeof hi, normalised ? "%.2f" : "%.0f", top);
  draw_text(img, hi, {bar.x + bar.width + 8, bar.y + tick_h}, tick, kBlack);
  draw_text(img, "0", {bar.x + bar.width + 8, bar.y + bar.height}, tick, kBlack);
  return img;
}

namespace {

// 1, 2 or 5 times a power of ten: about `parts` steps up to `most`.
int64_t nice_step(int64_t most, int parts) {
  const double raw = std::max(1.0, static_cast<double>(most) / parts);
  const double base = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * base >= raw) return std::max<int64_t>(1, static_cast<int64_t>(m * base));
  return static_cast<int64_t>(10 * base);
}

}  // namespace

std::vector<int> named_bars(const std::vector<int64_t>& counts, double bar_width, int name_height) {
  std::vector<int> order(counts.size());
  for (size_t c = 0; c < counts.size(); ++c) order[c] = static_cast<int>(c);
  // Largest first; equal counts by index, so the choice is stable.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return counts[a] > counts[b]; });
  std::vector<int> named;
  const int64_t most = counts.empty() ? 0 : counts[static_cast<size_t>(order.front())];
  for (int c : order) {
    // A bar under a tenth of the largest is a sliver: its name would say little and take room.
    if (counts[static_cast<size_t>(c)] == 0 || counts[static_cast<size_t>(c)] * 10 < most) break;
    const double centre = (c + 0.5) * bar_width;
    bool clear = true;
    for (int n : named)
      if (std::abs((n + 0.5) * bar_width - centre) < name_height + 4) clear = false;
    if (clear) named.push_back(c);
  }
  std::sort(named.begin(), named.end());
  return named;
}

void draw_instance_bars(cv::Mat& img, const cv::Rect& area, const std::vector<int64_t>& per_class,
                        const std::vector<std::string>& names, double tick, double title) {
  const int nc = static_cast<int>(per_class.size());
  const int tick_h = text_extent("0", tick).height;
  auto name_of = [&](int c) {
    return c < static_cast<int>(names.size()) ? names[static_cast<size_t>(c)] : std::to_string(c);
  };
  const int64_t most = std::max<int64_t>(1, *std::max_element(per_class.begin(), per_class.end()));
  // The y axis runs to the first tick at or above the largest count, with three to five
  // ticks, so the tallest bar's height reads off the axis.
  const int64_t step = nice_step(most, 4);
  const int64_t axis_top = (most + step - 1) / step * step;
  const int count_w = text_extent(std::to_string(axis_top), tick).width;
  // Every name under its bar up to 30 classes (as the reference); beyond, the largest classes
  // whose names do not overlap, since all of them cannot be read at any size.
  const double name_scale =
      nc <= 30 ? std::min(tick * 0.7, 0.8 * (area.width - 60.0) / nc / tick_h * tick) : tick * 0.7;
  const int name_h = text_extent("0", name_scale).height;
  const int left = area.x + count_w + 24, width = area.width - count_w - 44;
  const double bar_w = static_cast<double>(width - 4) / std::max(1, nc);  // 2 px clear of each side
  std::vector<int> named;
  if (nc <= 30)
    for (int c = 0; c < nc; ++c) named.push_back(c);
  else
    named = named_bars(per_class, bar_w, name_h);
  int name_len = 0;
  for (int c : named) name_len = std::max(name_len, text_extent(name_of(c), name_scale).width);
  const int axis_name_h = nc > 30 ? tick_h + 12 : 0;
  const cv::Rect plot(left, area.y, width, area.height - name_len - axis_name_h - 24);
  const std::string heading = "instances";
  centred(img, heading, plot.x + plot.width / 2, plot.y - 16,
          fit_scale(heading, title, area.width - 20));
  for (int64_t v = 0; v <= axis_top; v += step) {
    const int y =
        plot.y + plot.height - static_cast<int>(std::lround(double(v) / axis_top * plot.height));
    if (v > 0) cv::line(img, {plot.x, y}, {plot.x + plot.width, y}, kGrid, 2);
    const std::string text = std::to_string(v);
    // Centred on its tick, the top one inside the plot's height, clear of the heading above.
    draw_text(
        img, text,
        {plot.x - text_extent(text, tick).width - 10, std::max(y + tick_h / 2, plot.y + tick_h)},
        tick, kBlack);
  }
  for (int c = 0; c < nc; ++c) {
    const int h = static_cast<int>(
        std::lround(double(per_class[static_cast<size_t>(c)]) / axis_top * plot.height));
    const int x0 = plot.x + 2 + static_cast<int>(std::lround(c * bar_w));
    const int x1 = plot.x + 2 + static_cast<int>(std::lround((c + 1) * bar_w));
    // A gap between bars when they are wide enough; never narrower than 2 px.
    const int w = std::max(2, x1 - x0 - (bar_w >= 4 ? 1 : 0));
    if (h > 0)
      cv::rectangle(img, cv::Rect(x0, plot.y + plot.height - h, w, h), class_colour(c), cv::FILLED);
  }
  for (int c : named) {
    const std::string name = name_of(c);
    draw_vertical_text(img, name,
                       {plot.x + 2 + static_cast<int>((c + 0.5) * bar_w) - name_h / 2 - 4,
                        plot.y + plot.height + 10 + text_extent(name, name_scale).width},
                       name_scale, kBlack);
  }
  cv::rectangle(img, plot, kBlack, 2);
  if (nc > 30) {
    const std::string axis = std::to_string(nc) + " classes (the largest named)";
    centred(img, axis, plot.x + plot.width / 2, area.y + area.height - 12,
            fit_scale(axis, tick * 0.8, area.width - 20));
  }
}

cv::Mat draw_labels_plot(const std::vector<data::ImageRecord>& records,
                         const std::vector<std::string>& names) {
  const int cell = 450, width = 2 * cell, nc = std::max<int>(1, static_cast<int>(names.size()));
  cv::Mat img(2 * cell, width, CV_8UC3, kWhite);
  const double title = legible_scale(width, kTitlePx160 * 0.85);
  const double label = legible_scale(width, kLabelPx160);
  const double tick = legible_scale(width, kTickPx160);
  const int title_h = text_extent("0", title).height, tick_h = text_extent("0", tick).height;
  const int label_h = text_extent("0", label).height;
  std::vector<int64_t> per_class(static_cast<size_t>(nc), 0);
  std::vector<std::array<double, 5>> boxes;  // class, cx, cy, w, h (normalised)
  for (const auto& r : records)
    for (size_t n = 0; n < r.boxes_xyxy_px.size(); ++n) {
      const auto& b = r.boxes_xyxy_px[n];
      const int c = r.classes[n];
      if (c >= 0 && c < nc) ++per_class[static_cast<size_t>(c)];
      if (r.width > 0 && r.height > 0)
        boxes.push_back({double(c), (b[0] + b[2]) / 2.0 / r.width, (b[1] + b[3]) / 2.0 / r.height,
                         (b[2] - b[0]) / double(r.width), (b[3] - b[1]) / double(r.height)});
    }
  const int top = 16 + title_h + 16;  // each quadrant's plot starts under its title
  auto heading = [&](const std::string& s, const cv::Rect& plot) {
    centred(img, s, plot.x + plot.width / 2, plot.y - 16, fit_scale(s, title, cell - 20));
  };
  // 1. Instances per class.
  draw_instance_bars(img, cv::Rect(0, top, cell, cell - top), per_class, names, tick, title);
  // 2. Box shapes at the centre (up to 1000 boxes).
  {
    const cv::Rect plot(cell + 30, top, cell - 60, cell - top - 30);
    heading("box shapes", plot);
    for (size_t i = 0; i < boxes.size() && i < 1000; ++i) {
      const auto& b = boxes[i];
      const cv::Point a = px(plot, 0.5 - b[3] / 2, 0.5 + b[4] / 2),
                      z = px(plot, 0.5 + b[3] / 2, 0.5 - b[4] / 2);
      cv::rectangle(img, a, z, class_colour(static_cast<int>(b[0])), 1, cv::LINE_AA);
    }
    cv::rectangle(img, plot, kBlack, 2);
  }
  // 3, 4. 2-D histograms of centres and sizes, axes 0 and 1 marked.
  auto histogram = [&](cv::Rect plot, int a, int b, const std::string& heading_text,
                       const std::string& x_name, const std::string& y_name) {
    constexpr int bins = 40;
    std::vector<double> h(bins * bins, 0.0);
    for (const auto& box : boxes) {
      const int i = std::clamp(static_cast<int>(box[a] * bins), 0, bins - 1);
      const int j = std::clamp(static_cast<int>(box[b] * bins), 0, bins - 1);
      h[j * bins + i] += 1;
    }
    const double most = std::max(1.0, *std::max_element(h.begin(), h.end()));
    for (int j = 0; j < bins; ++j)
      for (int i = 0; i < bins; ++i) {
        const cv::Point p0 = px(plot, double(i) / bins, double(j + 1) / bins),
                        p1 = px(plot, double(i + 1) / bins, double(j) / bins);
        // Square root: a few busy bins do not wash out the rest.
        cv::rectangle(img, p0, p1, blues(std::sqrt(h[j * bins + i] / most)), cv::FILLED);
      }
    cv::rectangle(img, plot, kBlack, 2);
    heading(heading_text, plot);
    centred(img, x_name, plot.x + plot.width / 2, plot.y + plot.height + tick_h + label_h + 22,
            label);
    draw_vertical_text(
        img, y_name,
        {plot.x - label_h - 24, plot.y + (plot.height + text_extent(y_name, label).width) / 2},
        label, kBlack);
    for (int t = 0; t <= 1; ++t) {
      const std::string v = t == 0 ? "0" : "1";
      const cv::Point xb = px(plot, t, 0), yl = px(plot, 0, t);
      centred(img, v, xb.x, plot.y + plot.height + tick_h + 10, tick);
      draw_text(img, v, {plot.x - text_extent(v, tick).width - 8, yl.y + (t == 0 ? 0 : tick_h)},
                tick, kBlack);
    }
  };
  const int hist_left = label_h + 60, hist_side = cell - hist_left - 24;
  const int hist_top = cell + top, hist_h = cell - top - tick_h - label_h - 34;
  histogram(cv::Rect(hist_left, hist_top, hist_side, hist_h), 1, 2, "box centres", "x", "y");
  histogram(cv::Rect(cell + hist_left, hist_top, hist_side, hist_h), 3, 4, "box sizes", "width",
            "height");
  return img;
}

void save_labels_plot(const std::vector<data::ImageRecord>& records,
                      const std::vector<std::string>& names, const std::string& path) {
  save_chart(draw_labels_plot(records, names), path);
}

void save_chart(const cv::Mat& image, const std::string& path) {
  const bool png = std::filesystem::path(path).extension() == ".png";
  std::vector<uchar> bytes;
  if (!cv::imencode(png ? ".png" : ".jpg", image, bytes,
                    png ? std::vector<int>{} : std::vector<int>{cv::IMWRITE_JPEG_QUALITY, 90}))
    throw IoError("cannot encode " + path);
  write_file_atomic(path,
                    std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

}  // namespace detrain::report
