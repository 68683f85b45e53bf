// Flips; see flip.h. Same label maths as the reference's Instances.fliplr / flipud, done on
// xyxy pixels instead of normalised xywh.
#include "data/flip.h"

#include <opencv2/core.hpp>

namespace detrain::data {

void flip_horizontal(Sample& s, const std::vector<int64_t>& flip_idx) {
  cv::flip(s.image, s.image, 1);
  const float w = static_cast<float>(s.width());
  for (auto& b : s.boxes_xyxy_px) b = {w - b[2], b[1], w - b[0], b[3]};
  if (s.keypoints_px.empty()) return;
  const auto k = static_cast<size_t>(s.kpt_count);
  std::vector<float> flipped(s.keypoints_px.size());
  for (size_t n = 0; n < s.size(); ++n) {
    const float* src = s.keypoints_px.data() + n * k * 3;
    float* dst = flipped.data() + n * k * 3;
    for (size_t j = 0; j < k; ++j) {
      const float* p = src + 3 * static_cast<size_t>(flip_idx.empty() ? j : flip_idx[j]);
      dst[3 * j] = w - p[0];
      dst[3 * j + 1] = p[1];
      dst[3 * j + 2] = p[2];
    }
  }
  s.keypoints_px.swap(flipped);
}

void flip_vertical(Sample& s) {
  cv::flip(s.image, s.image, 0);
  const float h = static_cast<float>(s.height());
  for (auto& b : s.boxes_xyxy_px) b = {b[0], h - b[3], b[2], h - b[1]};
  for (size_t j = 1; j < s.keypoints_px.size(); j += 3) s.keypoints_px[j] = h - s.keypoints_px[j];
}

}  // namespace detrain::data
