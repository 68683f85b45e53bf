// Batch mosaics, predict drawings and the smoothing of results.png; see plots.h (results.png:
// results_plot.cpp; the drawing primitives: plots_annotate.cpp).
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

// The label font for a mosaic whose font size (the reference's PIL font, in pixels) is `fs`:
// Hershey simplex with capitals about 0.7 fs tall, as a sans-serif font of that size has.
LabelFont mosaic_font(int fs) {
  static const int digit_height = [] {  // of "0" at scale 1
    int baseline = 0;
    return cv::getTextSize("0", cv::FONT_HERSHEY_SIMPLEX, 1.0, 1, &baseline).height;
  }();
  return {0.7 * fs / digit_height, std::max(1, round_half_even(fs / 16.0))};
}

std::string class_name(const std::vector<std::string>& names, int cls) {
  return cls >= 0 && cls < static_cast<int>(names.size()) ? names[cls] : std::to_string(cls);
}

// The image's extension picks the format: predict keeps each input's (a.png stays a PNG).
void save_by_extension(const std::string& path, const cv::Mat& image) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
  if (ext == ".png" || ext == ".bmp")
    write_image(path, image, ext, {});
  else
    write_image(path, image, ".jpg", {cv::IMWRITE_JPEG_QUALITY, 90});
}

}  // namespace

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
  const int ns = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n))));
  int w = 1, h = 1;
  for (int i = 0; i < n; ++i) {
    w = std::max(w, images[i].image.cols);
    h = std::max(h, images[i].image.rows);
  }
  const double scale = static_cast<double>(style.max_size) / ns / std::max(h, w);
  if (scale < 1) {
    w = static_cast<int>(std::ceil(scale * w));
    h = static_cast<int>(std::ceil(scale * h));
  }
  const float s = static_cast<float>(std::min(scale, 1.0));  // image pixels -> tile pixels
  cv::Mat mosaic(ns * h, ns * w, CV_8UC3, kWhite);
  // The reference's sizes: a font of fs pixels, lines a tenth of it.
  const int fs = std::max(static_cast<int>((h + w) * ns * 0.01), 18);
  const int line = round_half_even(fs / 10.0);
  const LabelFont font = mosaic_font(fs);
  PoseStyle pose;
  pose.kpt_count = style.kpt_count;
  pose.skeleton = skeleton_for(style.kpt_count, style.skeleton);
  pose.colours = PoseColours::kMosaic;
  pose.radius = line;
  pose.limb_thickness = (line + 1) / 2;
  pose.conf_thres = style.conf_thres;

  for (int i = 0; i < n; ++i) {
    const PlotImage& item = images[i];
    const cv::Point origin((i / ns) * w, (i % ns) * h);  // column by column, as the reference
    if (!item.image.empty()) {
      cv::Mat resized = item.image;
      if (s < 1) cv::resize(item.image, resized, cv::Size(), s, s, cv::INTER_AREA);
      const cv::Rect roi(origin, cv::Size(std::min(resized.cols, w), std::min(resized.rows, h)));
      resized(cv::Rect(0, 0, roi.width, roi.height)).copyTo(mosaic(roi));
    }
    cv::rectangle(mosaic, cv::Rect(origin, cv::Size(w, h)), kWhite, 2);
    if (!item.title.empty()) {
      const std::string title = item.title.substr(0, 40);
      draw_text(mosaic, title, origin + cv::Point(5, 5 + text_extent(title, font.scale).height),
                font.scale, cv::Scalar(220, 220, 220), font.thickness);
    }
    auto tile_px = [&](float x, float y) {
      return std::array<float, 2>{origin.x + x * s, origin.y + y * s};
    };
    const bool prediction = !item.scores.empty();
    auto shown = [&](size_t j) { return !prediction || item.scores[j] > style.conf_thres; };
    const size_t count = item.boxes_xyxy.size();
    for (size_t j = 0; j < count; ++j) {
      if (!shown(j)) continue;
      const int cls = j < item.classes.size() ? item.classes[j] : 0;
      std::string label = class_name(style.names, cls);
      if (prediction) {
        char score[16];
        std::snprintf(score, sizeof score, " %.1f", item.scores[j]);
        label += score;
      }
      const auto& b = item.boxes_xyxy[j];
      const auto p = tile_px(b[0], b[1]), q = tile_px(b[2], b[3]);
      draw_box_label(mosaic, {p[0], p[1], q[0], q[1]}, label, class_colour(cls),
                     label_text_colour(cls), line, font, origin.y);
    }
    const size_t kvals = static_cast<size_t>(std::max(style.kpt_count, 0)) * 3;
    if (kvals == 0) continue;
    std::vector<float> xyv(kvals);
    for (size_t j = 0; j < count && (j + 1) * kvals <= item.keypoints.size(); ++j) {
      if (!shown(j)) continue;
      const float* k = item.keypoints.data() + j * kvals;
      for (size_t v = 0; v < kvals; v += 3) {
        const auto p = tile_px(k[v], k[v + 1]);
        xyv[v] = p[0];
        xyv[v + 1] = p[1];
        xyv[v + 2] = k[v + 2];
      }
      draw_keypoints(mosaic, xyv.data(), pose);
    }
  }
  return mosaic;
}

void save_batch_mosaic(const std::vector<PlotImage>& images, const MosaicStyle& style,
                       const std::string& path) {
  save_by_extension(path, draw_batch_mosaic(images, style));
}

cv::Mat draw_prediction(const PlotImage& item, const MosaicStyle& style) {
  cv::Mat img = item.image.clone();
  // Annotator's defaults for a cv2 picture: line width from the mean of its shape (height,
  // width and the 3 channels), text scale a third of it.
  const int line = std::max(round_half_even((img.rows + img.cols + 3) / 2.0 * 0.003), 2);
  const LabelFont font{line / 3.0, std::max(line - 1, 1)};
  const size_t count = item.boxes_xyxy.size();
  // Lowest score first, so the most confident box and label end up on top.
  for (size_t r = count; r-- > 0;) {
    const int cls = r < item.classes.size() ? item.classes[r] : 0;
    std::string label = class_name(style.names, cls);
    if (r < item.scores.size()) {
      char score[16];
      std::snprintf(score, sizeof score, " %.2f", item.scores[r]);
      label += score;
    }
    draw_box_label(img, item.boxes_xyxy[r], label, class_colour(cls), label_text_colour(cls), line,
                   font);
  }
  const size_t kvals = static_cast<size_t>(std::max(style.kpt_count, 0)) * 3;
  if (kvals == 0) return img;
  PoseStyle pose;
  pose.kpt_count = style.kpt_count;
  pose.skeleton = skeleton_for(style.kpt_count, style.skeleton);
  pose.colours = PoseColours::kPredict;
  pose.radius = line;
  pose.limb_thickness = (line + 1) / 2;
  pose.conf_thres = kKeypointConfThres;
  for (size_t r = count; r-- > 0;)
    if ((r + 1) * kvals <= item.keypoints.size())
      draw_keypoints(img, item.keypoints.data() + r * kvals, pose);
  return img;
}

void save_prediction(const PlotImage& image, const MosaicStyle& style, const std::string& path) {
  save_by_extension(path, draw_prediction(image, style));
}

}  // namespace detrain::report
