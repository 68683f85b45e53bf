// RandomHSV: gains r = U(-1, 1) * (hgain, sgain, vgain) applied through lookup tables in HSV
// space (hue shifted by r_h * 180 mod 180, saturation and value scaled by 1 + r and clipped).
// One pass of three byte tables between the two colour conversions, where the reference
// splits and merges the planes (same result, fewer passes).
#pragma once

#include <opencv2/core.hpp>

#include "common/rng.h"

namespace detrain::data {

struct HsvGains {
  double h = 0, s = 0, v = 0;  // r in [-gain, gain]
};

HsvGains draw_hsv(Rng& rng, double hgain, double sgain, double vgain);

// Applies the gains to a BGR uint8 image in place (no-op for zero gains).
void apply_hsv(cv::Mat& bgr, const HsvGains& gains);

}  // namespace detrain::data
