// RandomHSV; see hsv.h. The lookup tables follow the reference; the three tables are applied
// in one pass over the HSV bytes instead of split / LUT / merge.
#include "data/hsv.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

namespace detrain::data {

HsvGains draw_hsv(Rng& rng, double hgain, double sgain, double vgain) {
  HsvGains g;
  g.h = rng.uniform(-1, 1) * hgain;
  g.s = rng.uniform(-1, 1) * sgain;
  g.v = rng.uniform(-1, 1) * vgain;
  return g;
}

void apply_hsv(cv::Mat& bgr, const HsvGains& g) {
  if (g.h == 0 && g.s == 0 && g.v == 0) return;
  uint8_t hue[256], sat[256], val[256];
  for (int x = 0; x < 256; ++x) {
    // Python's % is a floored modulo (never negative); the casts truncate like astype(uint8).
    double h = std::fmod(x + g.h * 180.0, 180.0);
    if (h < 0) h += 180.0;
    hue[x] = static_cast<uint8_t>(h);
    sat[x] = static_cast<uint8_t>(std::clamp(x * (1 + g.s), 0.0, 255.0));
    val[x] = static_cast<uint8_t>(std::clamp(x * (1 + g.v), 0.0, 255.0));
  }
  sat[0] = 0;  // the reference keeps saturation 0 at 0 (greys stay grey)
  cv::Mat hsv;
  cv::cvtColor(bgr, hsv, cv::COLOR_BGR2HSV);
  // Three byte tables in one pass: cv::LUT with a 3-channel table is twice as slow here.
  for (int y = 0; y < hsv.rows; ++y) {
    uint8_t* p = hsv.ptr<uint8_t>(y);
    for (int x = 0; x < 3 * hsv.cols; x += 3) {
      p[x] = hue[p[x]];
      p[x + 1] = sat[p[x + 1]];
      p[x + 2] = val[p[x + 2]];
    }
  }
  cv::cvtColor(hsv, bgr, cv::COLOR_HSV2BGR);
}

}  // namespace detrain::data
