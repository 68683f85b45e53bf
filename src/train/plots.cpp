// Plots; see plots.h. Layout constants are in pixels of the output image.
#include "train/plots.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common/atomic_file.h"
#include "common/errors.h"

namespace detrain::train {

namespace fs = std::filesystem;
namespace {

constexpr int kPanelWidth = 300, kPanelHeight = 220;
constexpr int kMarginLeft = 56, kMarginRight = 12, kMarginTop = 26, kMarginBottom = 34;
constexpr int kGridColumns = 5;
const cv::Scalar kWhite(255, 255, 255), kBlack(0, 0, 0), kGrey(200, 200, 200);
const cv::Scalar kRawColour(180, 119, 31);     // matplotlib C0 (#1f77b4), BGR
const cv::Scalar kSmoothColour(14, 127, 255);  // matplotlib C1 (#ff7f0e), BGR
constexpr auto kFont = cv::FONT_HERSHEY_SIMPLEX;

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
  if (std::abs(v) < step * 1e-6) v = 0;
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

// One line of a panel.
struct Series {
  std::string name;
  std::vector<double> ys;
  cv::Scalar colour;
};

void put_text(cv::Mat& img, const std::string& text, cv::Point org, double scale,
              const cv::Scalar& colour, int thickness = 1) {
  cv::putText(img, text, org, kFont, scale, colour, thickness, cv::LINE_AA);
}

cv::Size text_size(const std::string& text, double scale, int thickness = 1) {
  int baseline = 0;
  return cv::getTextSize(text, kFont, scale, thickness, &baseline);
}

void draw_panel(cv::Mat& canvas, cv::Rect area, const std::string& title,
                const std::vector<double>& xs_all, const std::vector<Series>& series, bool legend) {
  const cv::Size title_size = text_size(title, 0.45);
  put_text(canvas, title, {area.x + (area.width - title_size.width) / 2, area.y + 17}, 0.45,
           kBlack);
  const cv::Rect plot(area.x + kMarginLeft, area.y + kMarginTop,
                      area.width - kMarginLeft - kMarginRight,
                      area.height - kMarginTop - kMarginBottom);
  cv::rectangle(canvas, plot, kBlack, 1);

  // Finite points of each series; the axes span all of them.
  std::vector<std::vector<double>> xs_of(series.size()), ys_of(series.size());
  std::vector<double> xs, ys;
  for (size_t k = 0; k < series.size(); ++k)
    for (size_t i = 0; i < series[k].ys.size() && i < xs_all.size(); ++i)
      if (std::isfinite(series[k].ys[i]) && std::isfinite(xs_all[i])) {
        xs_of[k].push_back(xs_all[i]);
        ys_of[k].push_back(series[k].ys[i]);
        xs.push_back(xs_all[i]);
        ys.push_back(series[k].ys[i]);
      }
  if (xs.empty()) {
    put_text(canvas, "no data", {plot.x + plot.width / 2 - 25, plot.y + plot.height / 2}, 0.4,
             kBlack);
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
  const double y_pad = (y_hi - y_lo) * 0.05;
  y_lo -= y_pad;
  y_hi += y_pad;
  auto to_px = [&](double x, double y) {
    return cv::Point2d(plot.x + (x - x_lo) / (x_hi - x_lo) * plot.width,
                       plot.y + plot.height - (y - y_lo) / (y_hi - y_lo) * plot.height);
  };
  auto fixed = [](const cv::Point2d& p) {
    return cv::Point(static_cast<int>(std::lround(p.x * 16)),
                     static_cast<int>(std::lround(p.y * 16)));
  };

  // Grid lines and tick labels.
  const double y_step = nice_step(y_hi - y_lo, 4);
  for (double v = std::ceil(y_lo / y_step) * y_step; v <= y_hi; v += y_step) {
    const int py = static_cast<int>(std::lround(to_px(x_lo, v).y));
    cv::line(canvas, {plot.x, py}, {plot.x + plot.width, py}, kGrey, 1);
    const std::string label = tick_text(v, y_step, std::max(std::abs(y_lo), std::abs(y_hi)));
    const cv::Size s = text_size(label, 0.35);
    put_text(canvas, label, {plot.x - s.width - 4, py + s.height / 2}, 0.35, kBlack);
  }
  const double x_step = std::max(1.0, nice_step(x_hi - x_lo, 5));
  for (double v = std::ceil(x_lo / x_step) * x_step; v <= x_hi + 1e-9; v += x_step) {
    const int px = static_cast<int>(std::lround(to_px(v, y_lo).x));
    cv::line(canvas, {px, plot.y + plot.height}, {px, plot.y + plot.height + 4}, kBlack, 1);
    const std::string label = tick_text(v, x_step, x_hi);
    const cv::Size s = text_size(label, 0.35);
    put_text(canvas, label, {px - s.width / 2, plot.y + plot.height + 8 + s.height}, 0.35, kBlack);
  }
  put_text(canvas, "epoch", {plot.x + plot.width / 2 - 15, area.y + area.height - 2}, 0.35, kBlack);
  cv::rectangle(canvas, plot, kBlack, 1);

  // Raw values: line with markers; smoothed (single-series panels): a thicker line over them.
  for (size_t k = 0; k < series.size(); ++k) {
    const auto &sx = xs_of[k], &sy = ys_of[k];
    for (size_t i = 0; i + 1 < sx.size(); ++i)
      cv::line(canvas, fixed(to_px(sx[i], sy[i])), fixed(to_px(sx[i + 1], sy[i + 1])),
               series[k].colour, 1, cv::LINE_AA, 4);
    for (size_t i = 0; i < sx.size(); ++i)
      cv::circle(canvas, fixed(to_px(sx[i], sy[i])), 3 * 16, series[k].colour, cv::FILLED,
                 cv::LINE_AA, 4);
    // A learning rate is a schedule, not a noisy measurement: no trend line.
    if (series.size() == 1 && sx.size() >= 3 && title != "lr") {
      const std::vector<double> smooth = trend_smooth(sy, 3.0);
      for (size_t i = 0; i + 1 < sx.size(); ++i)
        cv::line(canvas, fixed(to_px(sx[i], smooth[i])), fixed(to_px(sx[i + 1], smooth[i + 1])),
                 kSmoothColour, 2, cv::LINE_AA, 4);
    }
  }
  if (series.size() > 1) {  // e.g. the lr panel: one entry per parameter group
    cv::Point at(plot.x + plot.width - 64, plot.y + 12);
    for (size_t k = 0; k < series.size() && k < 8; ++k, at.y += 12) {
      cv::line(canvas, at + cv::Point(0, -4), at + cv::Point(12, -4), series[k].colour, 2,
               cv::LINE_AA);
      put_text(canvas, series[k].name, at + cv::Point(16, 0), 0.33, kBlack);
    }
  }
  if (legend) {
    const cv::Point at(plot.x + plot.width - 80, plot.y + 12);
    cv::circle(canvas, at + cv::Point(6, -4), 3, kRawColour, cv::FILLED, cv::LINE_AA);
    put_text(canvas, "results", at + cv::Point(14, 0), 0.35, kBlack);
    cv::line(canvas, at + cv::Point(0, 10), at + cv::Point(12, 10), kSmoothColour, 2, cv::LINE_AA);
    put_text(canvas, "smooth", at + cv::Point(14, 14), 0.35, kBlack);
  }
}

void write_image(const std::string& path, const cv::Mat& image, const std::string& ext,
                 const std::vector<int>& params) {
  std::vector<uchar> bytes;
  if (!cv::imencode(ext, image, bytes, params)) throw IoError("cannot encode " + path);
  write_file_atomic(path,
                    std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

cv::Scalar kpt_colour(int k, int kpt_count) {
  // COCO layout: face green, arms blue, legs orange; other layouts cycle the class palette.
  if (kpt_count != 17) return class_colour(k);
  if (k <= 4) return cv::Scalar(0, 255, 0);
  if (k <= 10) return cv::Scalar(255, 128, 51);
  return cv::Scalar(0, 128, 255);
}

// A filled label above the box corner, or inside the box when that would leave the tile.
void draw_label(cv::Mat& img, const std::string& text, cv::Point corner, const cv::Scalar& colour,
                double scale, int tile_top) {
  const cv::Size s = text_size(text, scale);
  int top = corner.y - s.height - 4;
  if (top < tile_top) top = corner.y;
  cv::rectangle(img, {corner.x, top}, {corner.x + s.width + 2, top + s.height + 4}, colour,
                cv::FILLED);
  put_text(img, text, {corner.x + 1, top + s.height + 1}, scale, kWhite);
}

}  // namespace

cv::Scalar class_colour(int index) {
  static const uint32_t kPalette[20] = {0xFF3838, 0xFF9D97, 0xFF701F, 0xFFB21D, 0xCFD231,
                                        0x48F90A, 0x92CC17, 0x3DDB86, 0x1A9334, 0x00D4BB,
                                        0x2C99A8, 0x00C2FF, 0x344593, 0x6473FF, 0x0018EC,
                                        0x8438FF, 0x520085, 0xCB38FF, 0xFF95C8, 0xFF37C7};
  const uint32_t rgb = kPalette[((index % 20) + 20) % 20];
  return cv::Scalar(rgb & 0xFF, (rgb >> 8) & 0xFF, (rgb >> 16) & 0xFF);
}

std::vector<double> gaussian_smooth(const std::vector<double>& values, double sigma) {
  const int64_t n = static_cast<int64_t>(values.size());
  if (n == 0 || sigma <= 0) return values;
  const int radius = static_cast<int>(4.0 * sigma + 0.5);
  std::vector<double> weights(2 * radius + 1);
  double sum = 0;
  for (int k = -radius; k <= radius; ++k)
    sum += weights[k + radius] = std::exp(-0.5 * k * k / (sigma * sigma));
  for (double& w : weights) w /= sum;
  std::vector<double> out(values.size());
  for (int64_t i = 0; i < n; ++i) {
    double acc = 0;
    for (int k = -radius; k <= radius; ++k) {
      // 'reflect' (d c b a | a b c d | d c b a), repeated for windows longer than the data.
      int64_t m = ((i + k) % (2 * n) + 2 * n) % (2 * n);
      if (m >= n) m = 2 * n - 1 - m;
      acc += weights[k + radius] * values[m];
    }
    out[i] = acc;
  }
  return out;
}

std::vector<double> trend_smooth(const std::vector<double>& values, double sigma) {
  // Gaussian-weighted local linear fit: a straight trend comes back unchanged, so the ends
  // follow the data instead of flattening towards it as a plain Gaussian filter does.
  const int64_t n = static_cast<int64_t>(values.size());
  if (n < 3 || sigma <= 0) return values;
  std::vector<double> out(values.size());
  for (int64_t i = 0; i < n; ++i) {
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double d = static_cast<double>(j - i), w = std::exp(-0.5 * d * d / (sigma * sigma));
      sw += w;
      sx += w * d;
      sy += w * values[j];
      sxx += w * d * d;
      sxy += w * d * values[j];
    }
    const double denom = sw * sxx - sx * sx;
    // The fit's value at d = 0 (its intercept); a degenerate window falls back to the mean.
    out[i] = std::abs(denom) > 1e-12 ? (sy * sxx - sx * sxy) / denom : sy / sw;
  }
  return out;
}

cv::Mat draw_results(const ResultsTable& table) {
  // Panels: every column but epoch/time, leaving out losses that are zero throughout (one the
  // model does not have, e.g. pose val/rle_loss); the lr/pg* groups share one panel, as they
  // differ only by warmup, and groups with the very same values share one line.
  std::vector<std::pair<std::string, std::vector<Series>>> panels;
  std::vector<Series> lr;
  const cv::Scalar lr_colours[] = {kRawColour,      kSmoothColour,   {44, 160, 44},
                                   {40, 39, 214},   {189, 103, 148}, {75, 86, 140},
                                   {194, 119, 227}, {127, 127, 127}};
  for (const auto& c : table.columns) {
    if (c == "epoch" || c == "time") continue;
    std::vector<double> ys = table.series(c);
    const bool all_zero = std::all_of(ys.begin(), ys.end(), [](double v) { return v == 0; });
    if (all_zero && !ys.empty() && c.find("_loss") != std::string::npos) continue;
    if (c.rfind("lr/", 0) == 0) {
      if (lr.empty()) panels.push_back({"lr", {}});  // where the first group stood
      auto same = std::find_if(lr.begin(), lr.end(), [&](const Series& s) { return s.ys == ys; });
      if (same != lr.end())
        same->name = same->name.substr(0, same->name.find('-')) + "-" + c.substr(3);
      else
        lr.push_back({c.substr(3), std::move(ys), lr_colours[lr.size() % 8]});
      continue;
    }
    panels.push_back({c, {Series{c, std::move(ys), kRawColour}}});
  }
  for (auto& [title, series] : panels)
    if (title == "lr") series = lr;
  const int n = static_cast<int>(panels.size());
  const int cols = std::max(1, std::min(kGridColumns, n));
  const int rows = std::max(1, (n + cols - 1) / cols);
  cv::Mat canvas(rows * kPanelHeight, cols * kPanelWidth, CV_8UC3, kWhite);
  std::vector<double> xs = table.series("epoch");
  if (xs.empty())
    for (size_t i = 0; i < table.rows.size(); ++i) xs.push_back(static_cast<double>(i + 1));
  for (int i = 0; i < n; ++i) {
    const cv::Rect area((i % cols) * kPanelWidth, (i / cols) * kPanelHeight, kPanelWidth,
                        kPanelHeight);
    draw_panel(canvas, area, panels[i].first, xs, panels[i].second, i == 0);
  }
  return canvas;
}

void save_results_png(const ResultsTable& table, const std::string& path) {
  if (table.rows.empty()) return;
  write_image(path, draw_results(table), ".png", {});
}

cv::Mat draw_batch_mosaic(const std::vector<PlotImage>& images, const MosaicStyle& style) {
  const int n = std::min<int>(static_cast<int>(images.size()), style.max_images);
  if (n == 0) return cv::Mat(64, 64, CV_8UC3, kWhite);
  const int grid = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n))));
  int tile_w = 1, tile_h = 1;
  for (int i = 0; i < n; ++i) {
    tile_w = std::max(tile_w, images[i].image.cols);
    tile_h = std::max(tile_h, images[i].image.rows);
  }
  const double scale =
      std::min(1.0, static_cast<double>(style.max_size) / (grid * std::max(tile_w, tile_h)));
  const int tw = static_cast<int>(std::ceil(tile_w * scale)),
            th = static_cast<int>(std::ceil(tile_h * scale));
  const int rows = (n + grid - 1) / grid;
  cv::Mat mosaic(rows * th, grid * tw, CV_8UC3, kWhite);
  const int line = std::max(2, static_cast<int>(std::lround(0.003 * (tw + th) / 2 * grid)));
  const double font = std::clamp(0.0012 * th, 0.3, 0.6);

  for (int i = 0; i < n; ++i) {
    const PlotImage& item = images[i];
    const cv::Point origin((i % grid) * tw, (i / grid) * th);
    if (!item.image.empty()) {
      cv::Mat resized;
      cv::resize(item.image, resized, cv::Size(), scale, scale, cv::INTER_AREA);
      const cv::Rect roi(origin, cv::Size(std::min(resized.cols, tw), std::min(resized.rows, th)));
      resized(cv::Rect(0, 0, roi.width, roi.height)).copyTo(mosaic(roi));
    }
    auto at = [&](float x, float y) {
      return cv::Point(origin.x + static_cast<int>(std::lround(x * scale)),
                       origin.y + static_cast<int>(std::lround(y * scale)));
    };
    const size_t count = item.boxes_xyxy.size();
    const int k_count = style.kpt_count;
    for (size_t j = 0; j < count; ++j) {
      const bool prediction = !item.scores.empty();
      if (prediction && item.scores[j] < style.min_score) continue;
      const int cls = j < item.classes.size() ? item.classes[j] : 0;
      const cv::Scalar colour = class_colour(cls);
      const auto& b = item.boxes_xyxy[j];
      cv::rectangle(mosaic, at(b[0], b[1]), at(b[2], b[3]), colour, line, cv::LINE_AA);
      std::string label = cls >= 0 && cls < static_cast<int>(style.names.size())
                              ? style.names[cls]
                              : std::to_string(cls);
      if (prediction) {
        char score[16];
        std::snprintf(score, sizeof score, " %.2f", item.scores[j]);
        label += score;
      }
      draw_label(mosaic, label, at(b[0], b[1]), colour, font, origin.y);

      if (k_count <= 0 || item.keypoints.size() < (j + 1) * k_count * 3) continue;
      const float* k = item.keypoints.data() + j * k_count * 3;
      auto shown = [&](int idx) {
        const float v = k[idx * 3 + 2];
        return prediction ? v >= style.min_kpt_score : v > 0;
      };
      for (const auto& limb : style.skeleton) {
        if (limb[0] >= k_count || limb[1] >= k_count || !shown(limb[0]) || !shown(limb[1]))
          continue;
        cv::line(mosaic, at(k[limb[0] * 3], k[limb[0] * 3 + 1]),
                 at(k[limb[1] * 3], k[limb[1] * 3 + 1]), kpt_colour(limb[1], k_count),
                 std::max(1, line / 2 + 1), cv::LINE_AA);
      }
      for (int p = 0; p < k_count; ++p)
        if (shown(p))
          cv::circle(mosaic, at(k[p * 3], k[p * 3 + 1]), std::max(2, line + 1),
                     kpt_colour(p, k_count), cv::FILLED, cv::LINE_AA);
    }
    cv::rectangle(mosaic, cv::Rect(origin, cv::Size(tw, th)), kWhite, std::max(1, line));
    if (!item.title.empty()) {
      const std::string title = item.title.size() > 40 ? item.title.substr(0, 40) : item.title;
      // Bottom-left, where it collides less with labels than the reference's top-left.
      put_text(mosaic, title, origin + cv::Point(5, th - 6 - line), font, cv::Scalar(220, 220, 220),
               1);
    }
  }
  return mosaic;
}

void save_batch_mosaic(const std::vector<PlotImage>& images, const MosaicStyle& style,
                       const std::string& path) {
  // The name's format: predict keeps each input's extension (a.png stays a PNG).
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
  const cv::Mat mosaic = draw_batch_mosaic(images, style);
  if (ext == ".png" || ext == ".bmp")
    write_image(path, mosaic, ext, {});
  else
    write_image(path, mosaic, ".jpg", {cv::IMWRITE_JPEG_QUALITY, 90});
}

}  // namespace detrain::train
