// Batch mosaics and the smoothing of results.png; see plots.h (results.png: results_plot.cpp).
#include "report/plots.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "report/plot_text.h"

namespace detrain::report {

namespace fs = std::filesystem;
namespace {

const cv::Scalar kWhite(255, 255, 255);

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
  const cv::Size s = text_extent(text, scale, 1);
  int top = corner.y - s.height - 4;
  if (top < tile_top) top = corner.y;
  cv::rectangle(img, {corner.x, top}, {corner.x + s.width + 2, top + s.height + 4}, colour,
                cv::FILLED);
  draw_text(img, text, {corner.x + 1, top + s.height + 1}, scale, kWhite, 1);
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
      draw_text(mosaic, title, origin + cv::Point(5, th - 6 - line), font,
                cv::Scalar(220, 220, 220), 1);
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

}  // namespace detrain::report
