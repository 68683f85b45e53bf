// See plots_charts.h. Sizes are fixed in pixels and text is drawn at least 0.55 scale, so a
// chart scaled to 640 px reads like the reference's and a 160 px thumbnail still shows the
// mean curve and the matrix's diagonal.
#include "train/plots_charts.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "train/plots.h"

namespace detrain::train {

namespace {

const cv::Scalar kWhite(255, 255, 255), kBlack(0, 0, 0), kGrid(225, 225, 225),
    kMeanColour(255, 0, 0), kFaint(160, 160, 160);
constexpr auto kFont = cv::FONT_HERSHEY_SIMPLEX;

void text(cv::Mat& img, const std::string& s, cv::Point at, double scale,
          const cv::Scalar& colour = kBlack, int thickness = 1) {
  cv::putText(img, s, at, kFont, scale, colour, thickness, cv::LINE_AA);
}

cv::Size measure(const std::string& s, double scale, int thickness = 1) {
  int baseline = 0;
  return cv::getTextSize(s, kFont, scale, thickness, &baseline);
}

// Text turned 90 degrees counter-clockwise (read bottom to top, like matplotlib's rotated
// labels), its start at `bottom_left`.
void vertical_text(cv::Mat& img, const std::string& s, cv::Point bottom_left, double scale,
                   const cv::Scalar& colour = kBlack) {
  const cv::Size size = measure(s, scale);
  cv::Mat strip(size.height + 6, size.width + 4, CV_8UC3, kWhite);
  text(strip, s, {2, size.height + 2}, scale, colour);
  cv::Mat turned;
  cv::rotate(strip, turned, cv::ROTATE_90_COUNTERCLOCKWISE);
  const cv::Rect at(bottom_left.x, bottom_left.y - turned.rows, turned.cols, turned.rows);
  const cv::Rect clipped = at & cv::Rect(0, 0, img.cols, img.rows);
  if (clipped.area() == 0) return;
  cv::Mat roi = img(clipped);
  cv::Mat src = turned(cv::Rect(clipped.x - at.x, clipped.y - at.y, clipped.width, clipped.height));
  cv::min(roi, src, roi);  // dark text over the white background
}

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

// Axes of a unit square plot: grid at 0.2 steps, tick labels, axis names.
void unit_axes(cv::Mat& img, const cv::Rect& plot, const std::string& x_label,
               const std::string& y_label) {
  for (int i = 0; i <= 5; ++i) {
    const double v = i / 5.0;
    const cv::Point xb = px(plot, v, 0), yl = px(plot, 0, v);
    cv::line(img, {xb.x, plot.y}, {xb.x, plot.y + plot.height}, kGrid, 1);
    cv::line(img, {plot.x, yl.y}, {plot.x + plot.width, yl.y}, kGrid, 1);
    char buf[8];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    const cv::Size s = measure(buf, 0.55);
    text(img, buf, {xb.x - s.width / 2, plot.y + plot.height + s.height + 10}, 0.55);
    text(img, buf, {plot.x - s.width - 8, yl.y + s.height / 2}, 0.55);
  }
  cv::rectangle(img, plot, kBlack, 1);
  const cv::Size xs = measure(x_label, 0.7);
  text(img, x_label, {plot.x + (plot.width - xs.width) / 2, plot.y + plot.height + 58}, 0.7);
  const cv::Size ys = measure(y_label, 0.7);
  vertical_text(img, y_label, {plot.x - 78, plot.y + (plot.height + ys.width) / 2}, 0.7);
}

}  // namespace

cv::Mat draw_curve_chart(const CurveChart& c) {
  const bool legend_per_class = !c.lines.empty() && c.lines.size() < 21;
  const int width = legend_per_class ? 1120 : 900, height = 640;
  cv::Mat img(height, width, CV_8UC3, kWhite);
  const cv::Rect plot(96, 56, 760 - 96, height - 56 - 84);
  const cv::Size ts = measure(c.title, 0.8, 2);
  text(img, c.title, {plot.x + (plot.width - ts.width) / 2, 36}, 0.8, kBlack, 2);
  unit_axes(img, plot, c.x_label, c.y_label);
  auto draw = [&](const std::vector<double>& ys, const cv::Scalar& colour, int thickness) {
    std::vector<cv::Point> points;
    for (size_t i = 0; i < ys.size() && i < c.xs.size(); ++i)
      points.push_back(px(plot, c.xs[i], std::clamp(ys[i], 0.0, 1.0)));
    cv::polylines(img, points, false, colour, thickness, cv::LINE_AA);
  };
  for (size_t k = 0; k < c.lines.size(); ++k)
    draw(c.lines[k], legend_per_class ? class_colour(static_cast<int>(k)) : kFaint, 1);
  draw(c.mean, kMeanColour, 4);
  // Legend: the mean first (bold), then the classes, to the right of the plot.
  cv::Point at(plot.x + plot.width + 24, plot.y + 16);
  if (!legend_per_class) at = {plot.x + plot.width - 330, plot.y + 30};
  cv::line(img, at + cv::Point(0, -6), at + cv::Point(28, -6), kMeanColour, 4, cv::LINE_AA);
  text(img, c.mean_label, at + cv::Point(36, 0), 0.55, kBlack, legend_per_class ? 1 : 2);
  if (legend_per_class)
    for (size_t k = 0; k < c.lines.size() && k < c.line_names.size(); ++k) {
      at.y += 26;
      cv::line(img, at + cv::Point(0, -6), at + cv::Point(28, -6),
               class_colour(static_cast<int>(k)), 2, cv::LINE_AA);
      text(img, c.line_names[k], at + cv::Point(36, 0), 0.5);
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
  const double label_scale = n <= 12 ? 0.6 : n <= 40 ? 0.45 : 0.32;
  int label_len = 0;
  if (show_names)
    for (const auto& l : labels) label_len = std::max(label_len, measure(l, label_scale).width);
  const int side = 760, left = 70 + label_len + 10, top_margin = 60, bottom = 70 + label_len + 10;
  cv::Mat img(top_margin + side + bottom, left + side + 120, CV_8UC3, kWhite);
  const double cell = static_cast<double>(side) / n;
  const std::string title =
      normalised ? "Confusion matrix (normalised by true class)" : "Confusion matrix (counts)";
  const cv::Size ts = measure(title, 0.8, 2);
  text(img, title, {left + (side - ts.width) / 2, 38}, 0.8, kBlack, 2);
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
      const double scale = std::clamp(cell / 70.0, 0.35, 0.8);
      const cv::Size s = measure(buf, scale);
      text(img, buf, {r.x + (r.width - s.width) / 2, r.y + (r.height + s.height) / 2}, scale,
           v / top > 0.5 ? kWhite : kBlack);
    }
  cv::rectangle(img, cv::Rect(left, top_margin, side, side), kBlack, 1);
  if (show_names)
    for (int i = 0; i < n; ++i) {
      const int centre = static_cast<int>((i + 0.5) * cell);
      const cv::Size s = measure(labels[i], label_scale);
      text(img, labels[i], {left - s.width - 6, top_margin + centre + s.height / 2}, label_scale);
      vertical_text(img, labels[i],
                    {left + centre - s.height / 2 - 3, top_margin + side + 8 + s.width},
                    label_scale);
    }
  const cv::Size xs = measure("True", 0.75);
  text(img, "True", {left + (side - xs.width) / 2, top_margin + side + bottom - 20}, 0.75);
  vertical_text(img, "Predicted", {14, top_margin + (side + measure("Predicted", 0.75).width) / 2},
                0.75);
  // Colour bar.
  const cv::Rect bar(left + side + 30, top_margin, 24, side);
  for (int y = 0; y < bar.height; ++y)
    cv::line(img, {bar.x, bar.y + y}, {bar.x + bar.width, bar.y + y},
             blues(1.0 - static_cast<double>(y) / bar.height));
  cv::rectangle(img, bar, kBlack, 1);
  char hi[16];
  std::snprintf(hi, sizeof hi, normalised ? "%.2f" : "%.0f", top);
  text(img, hi, {bar.x + bar.width + 4, bar.y + 12}, 0.5);
  text(img, "0", {bar.x + bar.width + 4, bar.y + bar.height}, 0.5);
  return img;
}

cv::Mat draw_labels_plot(const std::vector<data::ImageRecord>& records,
                         const std::vector<std::string>& names) {
  const int cell = 420, nc = std::max<int>(1, static_cast<int>(names.size()));
  cv::Mat img(2 * cell, 2 * cell, CV_8UC3, kWhite);
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
  // 1. Instances per class.
  {
    const cv::Rect plot(70, 40, cell - 90, cell - 110);
    text(img, "instances per class", {plot.x, 28}, 0.6, kBlack, 1);
    const int64_t most =
        std::max<int64_t>(1, *std::max_element(per_class.begin(), per_class.end()));
    const double w = static_cast<double>(plot.width) / nc;
    for (int c = 0; c < nc; ++c) {
      const int h = static_cast<int>(std::lround(double(per_class[c]) / most * plot.height));
      cv::rectangle(img,
                    cv::Rect(plot.x + static_cast<int>(c * w), plot.y + plot.height - h,
                             std::max(1, static_cast<int>(w) - 1), h),
                    class_colour(c), cv::FILLED);
      if (nc <= 30)
        vertical_text(img, c < static_cast<int>(names.size()) ? names[c] : std::to_string(c),
                      {plot.x + static_cast<int>((c + 0.5) * w) - 8, plot.y + plot.height + 66},
                      0.4);
    }
    cv::rectangle(img, plot, kBlack, 1);
    text(img, std::to_string(most), {6, plot.y + 12}, 0.5);
    text(img, "0", {50, plot.y + plot.height}, 0.5);
  }
  // 2. Box shapes at the centre (up to 1000 boxes).
  {
    const cv::Rect plot(cell + 30, 40, cell - 60, cell - 70);
    text(img, "box shapes", {plot.x, 28}, 0.6);
    for (size_t i = 0; i < boxes.size() && i < 1000; ++i) {
      const auto& b = boxes[i];
      const cv::Point a = px(plot, 0.5 - b[3] / 2, 0.5 + b[4] / 2),
                      z = px(plot, 0.5 + b[3] / 2, 0.5 - b[4] / 2);
      cv::rectangle(img, a, z, class_colour(static_cast<int>(b[0])), 1, cv::LINE_AA);
    }
    cv::rectangle(img, plot, kBlack, 1);
  }
  // 3, 4. 2-D histograms of centres and sizes.
  auto histogram = [&](cv::Rect plot, int a, int b, const std::string& title,
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
    cv::rectangle(img, plot, kBlack, 1);
    text(img, title, {plot.x, plot.y - 12}, 0.6);
    text(img, x_name, {plot.x + plot.width / 2 - 10, plot.y + plot.height + 40}, 0.6);
    vertical_text(img, y_name, {plot.x - 50, plot.y + plot.height / 2 + 20}, 0.6);
    for (int t = 0; t <= 2; ++t) {
      const std::string s = t == 0 ? "0" : t == 1 ? "0.5" : "1";
      const cv::Point xb = px(plot, t / 2.0, 0), yl = px(plot, 0, t / 2.0);
      text(img, s, {xb.x - 8, plot.y + plot.height + 18}, 0.45);
      text(img, s, {plot.x - 28, yl.y + 5}, 0.45);
    }
  };
  histogram(cv::Rect(70, cell + 40, cell - 100, cell - 100), 1, 2, "box centres", "x", "y");
  histogram(cv::Rect(cell + 70, cell + 40, cell - 100, cell - 100), 3, 4, "box sizes", "width",
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

}  // namespace detrain::train
