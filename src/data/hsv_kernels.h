// What the fused HSV kernels (data/hsv_avx2.cpp, data/hsv_avx512.cpp) share: OpenCV's 8-bit
// colour-conversion constants and the two ways its HSV->BGR rounds, depending on the column.
// Only hsv*.cpp include this file.
//
// OpenCV's uint8 BGR->HSV is integer arithmetic, the same in its vector kernel and its scalar
// code: s = (diff * sat_divisor(v) + 2048) >> 12 and h = (h' * hue_divisor(diff) + 2048) >> 12
// (plus 180 when negative), h' being g - b, b - r + 2 diff or r - g + 4 diff as v is r, g or b.
// Its uint8 HSV->BGR is float arithmetic that differs by column. OpenCV's AVX2 build computes a
// row's first (width / 32) * 32 pixels with its vector kernel, which forms v·(1 - s·f) and
// v·(1 - s·(1 - f)) with fused multiply-adds and truncates the ·255 result; the rest of the row
// goes through scalar code that contracts the first product only and rounds to nearest even.
// The kernels reproduce both (tests/data/test_hsv.cpp: all 2^24 colours in both modes).
#pragma once

#include <cmath>
#include <cstdint>
#include <opencv2/core.hpp>

#include "data/hsv.h"

namespace detrain::data::hsv_kernels {

// OpenCV's reciprocal tables: round((255 << 12) / v) and round((180 << 12) / (6 d)), 0 at 0.
// The integer rounding (half up) equals OpenCV's double division rounded half to even because
// no quotient is a tie: 2 (255 << 12) / v and 2 * 122880 / d are never odd integers for
// v, d <= 255 (both numerators hold 2^13 or more, and v, d < 2^8).
constexpr int sat_divisor(int v) { return v == 0 ? 0 : (2 * (255 << 12) + v) / (2 * v); }
constexpr int hue_divisor(int diff) {
  return diff == 0 ? 0 : (2 * 122880 + diff) / (2 * diff);  // 122880 = (180 << 12) / 6
}

// The pixels of a row that OpenCV converts with its vector kernel; the rest take its scalar code.
constexpr int opencv_vector_pixels(int width) { return width & ~31; }

// OpenCV's HSV->BGR scale of the hue byte (6.0f / 180 in float) and the sector of a hue below
// 180: the integer part of hue * scale.
inline constexpr float kHueScale = 6.0f / 180;
inline int hue_sector(uint8_t hue) { return static_cast<int>(static_cast<float>(hue) * kHueScale); }

// OpenCV's choice per sector 0..5 of tab[0..3] for the output B, G and R, where tab[0] = v,
// tab[1] = v (1 - s), tab[2] = v (1 - s f), tab[3] = v (1 - s (1 - f)). Every sector takes
// tab[0], tab[1] and one of tab[2] (odd sectors) or tab[3] (even sectors).
inline constexpr int kSectorSources[6][3] = {{1, 3, 0}, {1, 0, 2}, {3, 0, 1},
                                             {0, 2, 1}, {0, 1, 3}, {2, 1, 0}};

// The output byte of tab[0]: the value byte v as OpenCV's float v * (1 / 255) * 255, truncated
// (vector kernel) or rounded to nearest even (scalar code).
inline float value_times_255(uint8_t v) { return static_cast<float>(v) * (1.0f / 255.0f) * 255.0f; }
inline uint8_t value_truncated(uint8_t v) { return static_cast<uint8_t>(value_times_255(v)); }
inline uint8_t value_rounded(uint8_t v) {
  return static_cast<uint8_t>(std::nearbyint(value_times_255(v)));
}

// The fused pass over a CV_8UC3 image in place. Each assumes its CPU's instructions, hue table
// entries below 180 and OpenCV running its AVX2 colour kernels; hsv.cpp checks all three.
void fused_avx2(cv::Mat& bgr, const HsvTables& tables);
void fused_avx512(cv::Mat& bgr, const HsvTables& tables);

}  // namespace detrain::data::hsv_kernels
