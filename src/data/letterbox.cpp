// LetterBox; see letterbox.h. Bit-exact with the reference (cv::resize INTER_LINEAR +
// copyMakeBorder), checked against augment.safetensors.
#include "data/letterbox.h"

#include <cfenv>
#include <cmath>
#include <opencv2/imgproc.hpp>

namespace detrain::data {

double python_round(double x) {
  // nearbyint uses the current rounding mode, which is round-to-nearest-even unless changed.
  return std::nearbyint(x);
}

void letterbox(Sample& s, const LetterboxOptions& o) {
  const int h = s.height(), w = s.width();
  double r = std::min(static_cast<double>(o.out_height) / h, static_cast<double>(o.out_width) / w);
  if (!o.scaleup) r = std::min(r, 1.0);
  const int new_w = static_cast<int>(python_round(w * r));
  const int new_h = static_cast<int>(python_round(h * r));
  double dw = o.out_width - new_w, dh = o.out_height - new_h;
  if (o.center) {
    dw /= 2;
    dh /= 2;
  }
  if (new_w != w || new_h != h) {
    cv::Mat resized;
    cv::resize(s.image, resized, cv::Size(new_w, new_h), 0, 0, cv::INTER_LINEAR);
    s.image = resized;
  }
  const int top = o.center ? static_cast<int>(python_round(dh - 0.1)) : 0;
  const int bottom = static_cast<int>(python_round(dh + 0.1));
  const int left = o.center ? static_cast<int>(python_round(dw - 0.1)) : 0;
  const int right = static_cast<int>(python_round(dw + 0.1));
  if (top || bottom || left || right) {
    cv::Mat padded;
    cv::copyMakeBorder(s.image, padded, top, bottom, left, right, cv::BORDER_CONSTANT,
                       cv::Scalar::all(o.pad_value));
    s.image = padded;
  }
  scale_shift_labels(s, r, r, left, top);
  auto& p = s.placement;
  p = {p.ratio_x * r, p.ratio_y * r, p.pad_left * r + left, p.pad_top * r + top};
}

}  // namespace detrain::data
