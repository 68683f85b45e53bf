// RandomHSV; see hsv.h.
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
  cv::Mat lut(1, 256, CV_8UC3);
  auto* table = lut.ptr<cv::Vec3b>();
  for (int x = 0; x < 256; ++x) {
    // Python's % is a floored modulo (never negative); the casts truncate like astype(uint8).
    double hue = std::fmod(x + g.h * 180.0, 180.0);
    if (hue < 0) hue += 180.0;
    table[x][0] = static_cast<uint8_t>(hue);
    table[x][1] = static_cast<uint8_t>(std::clamp(x * (1 + g.s), 0.0, 255.0));
    table[x][2] = static_cast<uint8_t>(std::clamp(x * (1 + g.v), 0.0, 255.0));
  }
  table[0][1] = 0;  // the reference keeps saturation 0 at 0 (greys stay grey)
  cv::Mat hsv;
  cv::cvtColor(bgr, hsv, cv::COLOR_BGR2HSV);
  cv::LUT(hsv, lut, hsv);
  cv::cvtColor(hsv, bgr, cv::COLOR_HSV2BGR);
}

}  // namespace detrain::data
