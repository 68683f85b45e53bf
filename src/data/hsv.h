// RandomHSV: gains r = U(-1, 1) * (hgain, sgain, vgain) applied through lookup tables in HSV
// space (hue shifted by r_h * 180 mod 180, saturation and value scaled by 1 + r and clipped).
// The result is the reference's: OpenCV's uint8 BGR->HSV, the three tables, OpenCV's uint8
// HSV->BGR. Where OpenCV runs its AVX2 colour kernels (a CPU with AVX2 and FMA) every image goes
// through one fused pass that reproduces OpenCV's arithmetic exactly, column by column
// (data/hsv_kernels.h): 64 pixels per step with AVX-512 (data/hsv_avx512.cpp) or 8 with AVX2
// (data/hsv_avx2.cpp), checked on all 2^24 colours (tests/data/test_hsv.cpp). Other CPUs take
// OpenCV's two conversions.
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

// The implementations of the fused pass.
enum class HsvKernel { avx512, avx2 };
const char* hsv_kernel_name(HsvKernel kernel);

// Whether `kernel` runs here and equals OpenCV: the CPU has its instructions (AVX-512 F, BW and
// VBMI; AVX2 and FMA) and OpenCV runs its AVX2 colour kernels, whose arithmetic both reproduce.
bool hsv_kernel_available(HsvKernel kernel);

// The fused pass in place with `kernel`, or with the fastest available one; false, touching
// nothing, when it does not apply: not a non-empty CV_8UC3 image, a hue table entry of 180 or
// more (no sector of OpenCV's), or the kernel not available here.
bool apply_hsv_fused(cv::Mat& bgr, const HsvTables& tables, HsvKernel kernel);
bool apply_hsv_fused(cv::Mat& bgr, const HsvTables& tables);

}  // namespace detrain::data
