// RandomHSV: gains r = U(-1, 1) * (hgain, sgain, vgain) applied through lookup tables in HSV
// space (hue shifted by r_h * 180 mod 180, saturation and value scaled by 1 + r and clipped).
// The result is the reference's: OpenCV's uint8 BGR->HSV, the three tables, OpenCV's uint8
// HSV->BGR. On a CPU with AVX2 and FMA (where OpenCV runs its AVX2 colour kernels) rows whose
// width is a multiple of 32 go through one fused pass (data/hsv_avx2.cpp) that reproduces those
// kernels' arithmetic exactly, checked on all 2^24 colours (tests/data/test_hsv.cpp); other
// images take OpenCV's two conversions.
#pragma once

#include <array>
#include <cstdint>
#include <opencv2/core.hpp>

#include "common/rng.h"

namespace detrain::data {

struct HsvGains {
  double h = 0, s = 0, v = 0;  // r in [-gain, gain]
};

HsvGains draw_hsv(Rng& rng, double hgain, double sgain, double vgain);

// The reference's three byte tables for `gains` (hue, saturation, value).
struct HsvTables {
  std::array<uint8_t, 256> hue{}, sat{}, val{};
};
HsvTables hsv_tables(const HsvGains& gains);

// Applies the gains to a BGR uint8 image in place (no-op for zero gains).
void apply_hsv(cv::Mat& bgr, const HsvGains& gains);

// The same through OpenCV's two conversions only (what the fused pass must equal; tests).
void apply_hsv_with_opencv(cv::Mat& bgr, const HsvTables& tables);

// The fused pass in place; false, touching nothing, when it does not apply: not CV_8UC3, a width
// that is not a multiple of 32, or a CPU without AVX2 and FMA.
bool apply_hsv_fused(cv::Mat& bgr, const HsvTables& tables);

}  // namespace detrain::data
