// warp_scaled's column pass with AVX-512 BW and no gathers (data/scale_warp_columns.cpp); only
// scale_warp.cpp includes this file. The pass turns one vertically blended source row (uint16,
// 32 x the pixel values, 3 per source pixel) into one output row: output value j of pixel
// x = j / 3 is (g v[col0[x] + j % 3] + f v[col1[x] + j % 3] + 512) >> 10 with f = frac[x],
// g = 32 - f, as OpenCV's warpAffine sums it. The columns are the same for every output row, so
// the plan below is made once per warp: per 16 output values, the window of 64 row values their
// 32 sources lie in and where in it each one is.
#pragma once

#include <cstdint>
#include <vector>

namespace detrain::data::scale_warp_columns {

// How far past its last value the blended row must stay readable: a window reads 64 values.
constexpr int kWindow = 64;

struct Chunk {
  int base = 0;  // the window's first row value; -1 when the sources span more than a window
  alignas(64) uint16_t source[32]{};  // (col0 + c, col1 + c) - base per output value
  alignas(64) int16_t weight[32]{};   // (g, f) per output value
};

// The plan of one warp's columns; it keeps pointers to col0, col1 and frac (value offsets into
// the blended row and 1/32 px fractions per output pixel) for the chunks without a window.
struct Plan {
  std::vector<Chunk> chunks;
  const int* col0 = nullptr;
  const int* col1 = nullptr;
  const int* frac = nullptr;
  int values = 0;  // 3 x output pixels
};

Plan plan(const std::vector<int>& col0, const std::vector<int>& col1, const std::vector<int>& frac);

// Whether this CPU runs blend (AVX-512 F and BW).
bool available();

// One output row from the blended row `v` (readable kWindow values past every window base).
void blend(const Plan& plan, const uint16_t* v, uint8_t* out);

}  // namespace detrain::data::scale_warp_columns
