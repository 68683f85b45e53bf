// Bilinear warp by a scale-and-translate matrix [sx 0 tx; 0 sy ty] (sx, sy > 0) of 8-bit BGR
// images, byte for byte what cv::warpAffine(INTER_LINEAR) writes: the same inverted matrix,
// 1/32 px fixed-point coordinates and integer weights. It differs only in how it adds them up.
#pragma once

#include <cstdint>
#include <opencv2/core.hpp>

#include "data/pad_value.h"

namespace detrain::data {

// The matrices warp_scaled handles: no rotation, shear or mirroring.
bool is_scale_translate(const cv::Matx23d& m);

// How source pixels outside the image are read: the edge pixel, or `value` in every channel.
struct ScaleWarpBorder {
  bool replicate = false;
  uint8_t value = kPadGrey;
};

// The implementations of the horizontal blend: AVX-512 BW (a window permute per 16 output
// values, data/scale_warp_columns.h), AVX2 (two gathers per 4 pixels), portable C++; `fastest`
// takes the first of them this CPU runs. All write the same bytes.
enum class WarpColumns { fastest, avx512, avx2, portable };
bool warp_columns_available(WarpColumns columns);

// dst (CV_8UC3, its size is the output size; an ROI of a larger image is written in place)
// receives src (CV_8UC3, not empty) moved by `m`, which must pass is_scale_translate.
// OpenCV's weights are (32 - fx)(32 - fy) * 32 etc.: products, so the 4-tap sum splits into a
// vertical blend of two source rows (vectorised) and one horizontal blend per output pixel,
// with a single rounding at the end like OpenCV's. warpAffine's per-pixel remap is ~2x slower.
// `columns` must be available (tests force each one).
void warp_scaled(const cv::Mat& src, cv::Mat& dst, const cv::Matx23d& m,
                 const ScaleWarpBorder& border, WarpColumns columns = WarpColumns::fastest);

}  // namespace detrain::data
