// RandomPerspective; see random_affine.h. Bit-exact with the reference for a given matrix
// (checked against augment.safetensors); the matrix is drawn from our own Rng stream. Default
// draws (no rotation or shear) go through warp_scaled, warpAffine's bytes at half the cost.
#include "data/random_affine.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

#include "data/pad_value.h"
#include "data/scale_warp.h"

namespace detrain::data {

namespace {

constexpr double kPi = 3.14159265358979323846;

// Applies M to (x, y) in float32, dividing by w when `perspective` (the reference divides
// keypoints always; for an affine M w is exactly 1, so that is the same).
inline void apply(const cv::Matx33f& m, float x, float y, bool perspective, float& ox, float& oy) {
  ox = m(0, 0) * x + m(0, 1) * y + m(0, 2);
  oy = m(1, 0) * x + m(1, 1) * y + m(1, 2);
  if (perspective) {
    const float w = m(2, 0) * x + m(2, 1) * y + m(2, 2);
    ox /= w;
    oy /= w;
  }
}

}  // namespace

AffineDraw draw_affine(Rng& rng, const config::AugmentOptions& o, int in_w, int in_h, int out_w,
                       int out_h) {
  cv::Matx33f c = cv::Matx33f::eye();
  c(0, 2) = static_cast<float>(-in_w / 2.0);
  c(1, 2) = static_cast<float>(-in_h / 2.0);
  cv::Matx33f p = cv::Matx33f::eye();
  p(2, 0) = static_cast<float>(rng.uniform(-o.perspective, o.perspective));
  p(2, 1) = static_cast<float>(rng.uniform(-o.perspective, o.perspective));
  const double angle = rng.uniform(-o.degrees, o.degrees);
  const double scale = rng.uniform(1 - o.scale, 1 + o.scale);
  // cv::getRotationMatrix2D about the origin: [[a, b], [-b, a]], a = s cos, b = s sin.
  const double alpha = scale * std::cos(angle * kPi / 180.0);
  const double beta = scale * std::sin(angle * kPi / 180.0);
  cv::Matx33f r = cv::Matx33f::eye();
  r(0, 0) = static_cast<float>(alpha);
  r(0, 1) = static_cast<float>(beta);
  r(1, 0) = static_cast<float>(-beta);
  r(1, 1) = static_cast<float>(alpha);
  cv::Matx33f sh = cv::Matx33f::eye();
  sh(0, 1) = static_cast<float>(std::tan(rng.uniform(-o.shear, o.shear) * kPi / 180.0));
  sh(1, 0) = static_cast<float>(std::tan(rng.uniform(-o.shear, o.shear) * kPi / 180.0));
  cv::Matx33f t = cv::Matx33f::eye();
  t(0, 2) = static_cast<float>(rng.uniform(0.5 - o.translate, 0.5 + o.translate) * out_w);
  t(1, 2) = static_cast<float>(rng.uniform(0.5 - o.translate, 0.5 + o.translate) * out_h);
  AffineDraw d;
  d.matrix = t * sh * r * p * c;
  d.scale = static_cast<float>(scale);
  d.perspective = o.perspective != 0.0;
  return d;
}

bool box_candidate(const BoxXyxy& b1, const BoxXyxy& b2, float wh_thr, float ar_thr,
                   float area_thr) {
  constexpr float kEps = 1e-16f;
  const float w1 = b1[2] - b1[0], h1 = b1[3] - b1[1];
  const float w2 = b2[2] - b2[0], h2 = b2[3] - b2[1];
  const float ar = std::max(w2 / (h2 + kEps), h2 / (w2 + kEps));
  return w2 > wh_thr && h2 > wh_thr && w2 * h2 / (w1 * h1 + kEps) > area_thr && ar < ar_thr;
}

void warp_sample(Sample& s, const AffineDraw& d, int out_w, int out_h) {
  const cv::Matx33f& m = d.matrix;
  const bool resize = out_w != s.width() || out_h != s.height();
  if (resize || m != cv::Matx33f::eye()) {
    cv::Mat out;
    const cv::Matx23d affine(m(0, 0), m(0, 1), m(0, 2), m(1, 0), m(1, 1), m(1, 2));
    if (!d.perspective && is_scale_translate(affine) && s.image.type() == CV_8UC3 &&
        !s.image.empty()) {
      out.create(out_h, out_w, CV_8UC3);
      warp_scaled(s.image, out, affine, {false, kPadGrey});
    } else if (d.perspective)
      cv::warpPerspective(s.image, out, m, cv::Size(out_w, out_h), cv::INTER_LINEAR,
                          cv::BORDER_CONSTANT, cv::Scalar::all(kPadGrey));
    else
      cv::warpAffine(s.image, out, cv::Matx23f(m.val), cv::Size(out_w, out_h), cv::INTER_LINEAR,
                     cv::BORDER_CONSTANT, cv::Scalar::all(kPadGrey));
    s.image = out;
  }
  warp_labels(s, d, out_w, out_h);
}

void warp_labels(Sample& s, const AffineDraw& d, int out_w, int out_h) {
  const cv::Matx33f& m = d.matrix;
  const std::vector<BoxXyxy> before = s.boxes_xyxy_px;
  for (auto& b : s.boxes_xyxy_px) {
    const float xs[4] = {b[0], b[2], b[2], b[0]};
    const float ys[4] = {b[1], b[3], b[1], b[3]};
    float x1 = 0, y1 = 0, x2 = 0, y2 = 0;
    for (int k = 0; k < 4; ++k) {
      float x, y;
      apply(m, xs[k], ys[k], d.perspective, x, y);
      x1 = k ? std::min(x1, x) : x;
      x2 = k ? std::max(x2, x) : x;
      y1 = k ? std::min(y1, y) : y;
      y2 = k ? std::max(y2, y) : y;
    }
    b = {x1, y1, x2, y2};
  }
  for (size_t j = 0; j < s.keypoints_px.size(); j += 3)
    apply(m, s.keypoints_px[j], s.keypoints_px[j + 1], d.perspective, s.keypoints_px[j],
          s.keypoints_px[j + 1]);
  clip_labels(s, static_cast<float>(out_w), static_cast<float>(out_h));
  std::vector<uint8_t> keep(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const auto& b = before[i];
    const BoxXyxy scaled = {b[0] * d.scale, b[1] * d.scale, b[2] * d.scale, b[3] * d.scale};
    keep[i] = box_candidate(scaled, s.boxes_xyxy_px[i]);
  }
  s.keep_rows(keep);
}

}  // namespace detrain::data
