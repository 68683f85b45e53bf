// Label operations of Sample; see sample.h. One definition of clipping and keypoint
// visibility for every transform, as the reference's Instances.clip.
#include "data/sample.h"

#include <algorithm>

namespace detrain::data {

void Sample::keep_rows(const std::vector<uint8_t>& keep) {
  const size_t k3 = static_cast<size_t>(kpt_count) * 3;
  size_t out = 0;
  for (size_t i = 0; i < boxes_xyxy_px.size(); ++i) {
    if (!keep[i]) continue;
    boxes_xyxy_px[out] = boxes_xyxy_px[i];
    classes[out] = classes[i];
    if (k3 > 0) std::copy_n(keypoints_px.begin() + i * k3, k3, keypoints_px.begin() + out * k3);
    ++out;
  }
  boxes_xyxy_px.resize(out);
  classes.resize(out);
  keypoints_px.resize(out * k3);
}

void Sample::append_labels(const Sample& other, float dx, float dy) {
  for (const auto& b : other.boxes_xyxy_px)
    boxes_xyxy_px.push_back({b[0] + dx, b[1] + dy, b[2] + dx, b[3] + dy});
  classes.insert(classes.end(), other.classes.begin(), other.classes.end());
  for (size_t j = 0; j < other.keypoints_px.size(); j += 3) {
    keypoints_px.push_back(other.keypoints_px[j] + dx);
    keypoints_px.push_back(other.keypoints_px[j + 1] + dy);
    keypoints_px.push_back(other.keypoints_px[j + 2]);
  }
}

Sample sample_from_record(const ImageRecord& record, int64_t kpt_count, const cv::Mat& image,
                          int64_t record_index) {
  Sample s;
  s.image = image;
  s.kpt_count = kpt_count;
  s.boxes_xyxy_px = record.boxes_xyxy_px;
  s.classes = record.classes;
  s.keypoints_px = record.keypoints_px;
  s.record_index = record_index;
  s.image_id = record.image_id;
  s.orig_width = record.width;
  s.orig_height = record.height;
  s.file = record.file;
  const double sx = static_cast<double>(image.cols) / record.width;
  const double sy = static_cast<double>(image.rows) / record.height;
  s.placement = {sx, sy, 0.0, 0.0};
  if (sx != 1.0 || sy != 1.0) scale_shift_labels(s, sx, sy, 0.0, 0.0);
  return s;
}

void scale_shift_labels(Sample& s, double sx, double sy, double dx, double dy) {
  const auto fx = static_cast<float>(sx), fy = static_cast<float>(sy);
  const auto fdx = static_cast<float>(dx), fdy = static_cast<float>(dy);
  for (auto& b : s.boxes_xyxy_px)
    b = {b[0] * fx + fdx, b[1] * fy + fdy, b[2] * fx + fdx, b[3] * fy + fdy};
  for (size_t j = 0; j < s.keypoints_px.size(); j += 3) {
    s.keypoints_px[j] = s.keypoints_px[j] * fx + fdx;
    s.keypoints_px[j + 1] = s.keypoints_px[j + 1] * fy + fdy;
  }
}

void clip_labels(Sample& s, float w, float h) {
  for (auto& b : s.boxes_xyxy_px)
    b = {std::clamp(b[0], 0.f, w), std::clamp(b[1], 0.f, h), std::clamp(b[2], 0.f, w),
         std::clamp(b[3], 0.f, h)};
  for (size_t j = 0; j < s.keypoints_px.size(); j += 3) {
    float& x = s.keypoints_px[j];
    float& y = s.keypoints_px[j + 1];
    if (x < 0 || y < 0 || x > w || y > h) s.keypoints_px[j + 2] = 0.f;
    x = std::clamp(x, 0.f, w);
    y = std::clamp(y, 0.f, h);
  }
}

void drop_empty_boxes(Sample& s) {
  std::vector<uint8_t> keep(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const auto& b = s.boxes_xyxy_px[i];
    keep[i] = b[2] - b[0] > 0 && b[3] - b[1] > 0;
  }
  s.keep_rows(keep);
}

}  // namespace detrain::data
