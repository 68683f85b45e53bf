// Preview grid and split census; see preview.h. The grid is drawn from the collated tensors
// (what the model sees), unlike the reference's plot_images of the labels.
#include "data/preview.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

#include "data/decode.h"

namespace detrain::data {

namespace {

constexpr int kSizeBins = 7;
constexpr double kBinEdges[kSizeBins - 1] = {8, 16, 32, 64, 128, 256};
constexpr const char* kBinNames[kSizeBins] = {"< 8",    "8-16",    "16-32", "32-64",
                                              "64-128", "128-256", ">= 256"};

cv::Scalar class_colour(int64_t cls) {
  // Well-separated hues from the golden angle; bright enough for white labels on them.
  cv::Mat hsv(1, 1, CV_8UC3, cv::Scalar(static_cast<double>((cls * 137) % 180), 200, 230));
  cv::Mat bgr;
  cv::cvtColor(hsv, bgr, cv::COLOR_HSV2BGR);
  const auto p = bgr.at<cv::Vec3b>(0, 0);
  return {double(p[0]), double(p[1]), double(p[2])};
}

}  // namespace

cv::Mat render_batch_grid(const Batch& batch, const DatasetInfo& info, int columns) {
  const int64_t b = batch.size();
  if (b == 0) return {};
  const int h = static_cast<int>(batch.images.size(2)), w = static_cast<int>(batch.images.size(3));
  const int cols = columns > 0 ? columns : static_cast<int>(std::ceil(std::sqrt(double(b))));
  const int rows = static_cast<int>((b + cols - 1) / cols);
  cv::Mat grid(rows * h, cols * w, CV_8UC3, cv::Scalar::all(0));
  const auto images = batch.images.contiguous();
  const auto boxes = batch.boxes_xywhn.contiguous();
  const auto cls = batch.cls.contiguous();
  const auto idx = batch.batch_idx.contiguous();
  const torch::Tensor kpts =
      batch.keypoints.defined() ? batch.keypoints.contiguous() : torch::Tensor();
  const int64_t k = kpts.defined() ? kpts.size(1) : 0;
  const double font = std::max(0.35, h / 1400.0);
  for (int64_t i = 0; i < b; ++i) {
    const auto* chw = images.data_ptr<uint8_t>() + i * 3 * h * w;
    cv::Mat tile = grid(cv::Rect(int(i % cols) * w, int(i / cols) * h, w, h));
    // RGB planes -> BGR pixels.
    const cv::Mat planes[3] = {cv::Mat(h, w, CV_8UC1, const_cast<uint8_t*>(chw + 2 * h * w)),
                               cv::Mat(h, w, CV_8UC1, const_cast<uint8_t*>(chw + h * w)),
                               cv::Mat(h, w, CV_8UC1, const_cast<uint8_t*>(chw))};
    cv::merge(planes, 3, tile);
    for (int64_t t = 0; t < cls.size(0); ++t) {
      if (idx[t].item<int64_t>() != i) continue;
      const auto* bx = boxes.data_ptr<float>() + t * 4;
      const int64_t c = cls[t].item<int64_t>();
      const cv::Scalar colour = class_colour(c);
      const cv::Point p1(int((bx[0] - bx[2] / 2) * w), int((bx[1] - bx[3] / 2) * h));
      const cv::Point p2(int((bx[0] + bx[2] / 2) * w), int((bx[1] + bx[3] / 2) * h));
      cv::rectangle(tile, p1, p2, colour, 2);
      const std::string name = c >= 0 && c < info.nc() ? info.names[size_t(c)] : std::to_string(c);
      int base = 0;
      const cv::Size text = cv::getTextSize(name, cv::FONT_HERSHEY_SIMPLEX, font, 1, &base);
      const cv::Point at(p1.x, std::max(text.height + 2, p1.y));
      cv::rectangle(tile, at + cv::Point(0, base), at + cv::Point(text.width, -text.height - 2),
                    colour, cv::FILLED);
      cv::putText(tile, name, at, cv::FONT_HERSHEY_SIMPLEX, font, cv::Scalar::all(255), 1,
                  cv::LINE_AA);
      if (k == 0) continue;
      const float* kp = kpts.data_ptr<float>() + t * k * 3;
      auto point = [&](int64_t j) { return cv::Point(int(kp[j * 3] * w), int(kp[j * 3 + 1] * h)); };
      for (const auto& limb : info.skeleton)
        if (kp[limb[0] * 3 + 2] > 0 && kp[limb[1] * 3 + 2] > 0)
          cv::line(tile, point(limb[0]), point(limb[1]), colour, 2, cv::LINE_AA);
      for (int64_t j = 0; j < k; ++j)
        if (kp[j * 3 + 2] > 0) {
          // Left keypoints (odd COCO indices) green, right ones red, the nose white.
          const cv::Scalar dot = j == 0  ? cv::Scalar::all(255)
                                 : j % 2 ? cv::Scalar(0, 220, 0)
                                         : cv::Scalar(0, 0, 230);
          cv::circle(tile, point(j), 3, dot, cv::FILLED, cv::LINE_AA);
        }
    }
  }
  return grid;
}

SplitStats compute_stats(const Records& records, const DatasetInfo& info, bool check_images) {
  SplitStats s;
  s.records = records.stats;
  s.instances_per_class.assign(size_t(info.nc()), 0);
  s.images_per_class.assign(size_t(info.nc()), 0);
  s.size_histogram.assign(kSizeBins, 0);
  const size_t k3 = size_t(info.kpt_count) * 3;
  for (const auto& r : records.images) {
    std::vector<uint8_t> present(size_t(info.nc()), 0);
    for (size_t i = 0; i < r.boxes_xyxy_px.size(); ++i) {
      const auto& b = r.boxes_xyxy_px[i];
      const auto c = size_t(r.classes[i]);
      ++s.instances_per_class[c];
      present[c] = 1;
      const double side = std::sqrt(double(b[2] - b[0]) * double(b[3] - b[1]));
      s.size_histogram[size_t(std::upper_bound(kBinEdges, kBinEdges + kSizeBins - 1, side) -
                              kBinEdges)]++;
      if (k3 == 0) continue;
      int64_t labelled = 0;
      for (size_t j = 2; j < k3; j += 3) labelled += r.keypoints_px[i * k3 + j] > 0;
      s.labelled_keypoints += labelled;
      s.keypoint_instances += labelled > 0;
    }
    for (size_t c = 0; c < present.size(); ++c) s.images_per_class[c] += present[c];
    if (check_images && !load_image(r.file, 0, false).ok()) {
      ++s.corrupt_images;
      if (s.corrupt_examples.size() < 5) s.corrupt_examples.push_back(r.file);
    }
  }
  return s;
}

std::string format_stats(const SplitStats& s, const DatasetInfo& info, const std::string& split) {
  const auto& r = s.records;
  std::string out = fmt::format("{} ({}): {} images, {} backgrounds (no targets), {} annotations\n",
                                info.yaml_path, split, r.images, r.backgrounds, r.annotations);
  out += fmt::format("  {:<4} {:<16} {:>6} {:>10} {:>7}\n", "idx", "class", "id", "instances",
                     "images");
  for (size_t c = 0; c < s.instances_per_class.size(); ++c)
    out += fmt::format("  {:<4} {:<16} {:>6} {:>10} {:>7}\n", c, info.names[c], info.coco_ids[c],
                       s.instances_per_class[c], s.images_per_class[c]);
  out += "  box size (sqrt(area), original px):";
  for (int i = 0; i < kSizeBins; ++i)
    out += fmt::format(" {} {}{}", kBinNames[i], s.size_histogram[size_t(i)],
                       i + 1 < kSizeBins ? "," : "\n");
  if (info.has_keypoints())
    out += fmt::format("  keypoints: {} instances with labelled keypoints, {} labelled points\n",
                       s.keypoint_instances, s.labelled_keypoints);
  out += fmt::format(
      "  problems: {} crowd regions (not targets), {} boxes clipped to their image, {} empty "
      "boxes dropped, {} images missing, {} filtered by keep_images",
      r.crowd, r.clipped, r.dropped_empty, r.images_missing, r.images_filtered);
  out += s.corrupt_images >= 0 ? fmt::format(", {} corrupt images\n", s.corrupt_images) : "\n";
  for (const auto& f : s.corrupt_examples) out += "    corrupt: " + f + "\n";
  for (const auto& f : r.missing_examples) out += "    missing: " + f + "\n";
  return out;
}

}  // namespace detrain::data
