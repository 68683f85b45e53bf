// Scale-and-translate bilinear warp; see scale_warp.h. The coordinate maths follows OpenCV's
// warpAffine (inverse matrix in double, 10-bit steps rounded to 1/32 px); the blend is regrouped
// (exact in integers) so the source-row half runs on 16 or 32 bytes at a time, and the column
// half takes 16 output values per step with AVX-512 (scale_warp_columns.h) or 4 output pixels
// per step with AVX2 (two 64-bit gathers and a madd).
#include "data/scale_warp.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "data/scale_warp_columns.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define DETRAIN_WARP_AVX2 1
#endif

namespace detrain::data {

namespace {

// OpenCV's fixed point: coordinates in 1/1024 px, rounded to 1/32 px for the weights.
constexpr int kCoordBits = 10;
constexpr int kFracBits = 5;
constexpr int kFracSize = 1 << kFracBits;                       // 32 weight steps per pixel
constexpr int kRoundDelta = (1 << kCoordBits) / kFracSize / 2;  // half a weight step
// sum = 32 * (vertical weight) * (horizontal weight) * pixel: 10 bits of weight, rounded.
constexpr int kBlendShift = 2 * kFracBits;

// GCC/Clang vector types: 16 bytes widened to 16 uint16 lanes (SSE2 or NEON, no intrinsics).
typedef uint8_t U8x16 __attribute__((vector_size(16)));
typedef uint16_t U16x16 __attribute__((vector_size(32)));

// OpenCV's saturate_cast<int>(double): round half to even in the default rounding mode.
int round_to_int(double v) { return static_cast<int>(std::lrint(v)); }

// Integer source position (1/32 px fraction apart) of an output coordinate, as warpAffine's
// short map: floor(X / 32) saturated to int16, fraction X mod 32.
struct Tap {
  int index = 0;
  int frac = 0;
};
Tap tap_of(int fixed) {
  const int x = fixed >> kFracBits;
  return {std::clamp<int>(x >> kFracBits, std::numeric_limits<int16_t>::min(),
                          std::numeric_limits<int16_t>::max()),
          x & (kFracSize - 1)};
}

// Blends two source rows (bytes) with weights w0 + w1 = 32 into `out` (n uint16 values).
#ifdef DETRAIN_WARP_AVX2
__attribute__((target_clones("avx2", "default")))
#endif
void blend_rows(const uint8_t* __restrict r0, const uint8_t* __restrict r1, int w0, int w1,
                uint16_t* __restrict out, int n) {
  const U16x16 a0 = U16x16{} + static_cast<uint16_t>(w0);
  const U16x16 a1 = U16x16{} + static_cast<uint16_t>(w1);
  int j = 0;
  for (; j + 16 <= n; j += 16) {
    U8x16 p, q;
    std::memcpy(&p, r0 + j, sizeof(p));
    std::memcpy(&q, r1 + j, sizeof(q));
    const U16x16 v =
        __builtin_convertvector(p, U16x16) * a0 + __builtin_convertvector(q, U16x16) * a1;
    std::memcpy(out + j, &v, sizeof(v));
  }
  for (; j < n; ++j) out[j] = static_cast<uint16_t>(w0 * r0[j] + w1 * r1[j]);
}

// The column half of one output row: out[3x + c] = (g v[col0 + c] + f v[col1 + c] + half) >> 10
// with f = frac[x], g = 32 - f, for x in [0, n). Returns how many pixels it wrote (a multiple of
// 4; the caller finishes the rest). `v` must have 4 readable values at every column offset.
#ifdef DETRAIN_WARP_AVX2
__attribute__((target("avx2"))) int blend_columns_avx2(const uint16_t* v, const int* col0,
                                                       const int* col1, const int* weights,
                                                       uint8_t* out, int n) {
  constexpr int kHalf = 1 << (kBlendShift - 1);
  const __m256i half = _mm256_set1_epi32(kHalf);
  const __m256i even = _mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2);
  const __m256i odd = _mm256_setr_epi32(1, 1, 1, 1, 3, 3, 3, 3);
  // Bytes 0-2 and 4-6 of each lane's two pixels (the 4th value of each pixel is not ours).
  const __m256i pick = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0,
                                        1, 2, 4, 5, 6, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const auto* base = reinterpret_cast<const long long*>(v);
  int x = 0;
  for (; x + 4 <= n; x += 4, out += 12) {
    const __m128i i0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(col0 + x));
    const __m128i i1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(col1 + x));
    const __m256i p = _mm256_i32gather_epi64(base, i0, 2);  // per pixel: v[col0 .. col0 + 3]
    const __m256i q = _mm256_i32gather_epi64(base, i1, 2);
    const __m256i w = _mm256_castsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(weights + x)));  // (g, f) per pixel
    // Pixels 0 and 2 (low words of each lane), then 1 and 3: (p_c, q_c) pairs times (g, f).
    const __m256i a =
        _mm256_madd_epi16(_mm256_unpacklo_epi16(p, q), _mm256_permutevar8x32_epi32(w, even));
    const __m256i b =
        _mm256_madd_epi16(_mm256_unpackhi_epi16(p, q), _mm256_permutevar8x32_epi32(w, odd));
    const __m256i ra = _mm256_srli_epi32(_mm256_add_epi32(a, half), kBlendShift);
    const __m256i rb = _mm256_srli_epi32(_mm256_add_epi32(b, half), kBlendShift);
    const __m256i words = _mm256_packus_epi32(ra, rb);  // lane: pixel 0|2 values, 1|3 values
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_packus_epi16(words, words), pick);
    const __m128i first = _mm256_castsi256_si128(bytes);        // pixels 0, 1: 6 bytes
    const __m128i second = _mm256_extracti128_si256(bytes, 1);  // pixels 2, 3: 6 bytes
    const __m128i twelve = _mm_or_si128(first, _mm_slli_si128(second, 6));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out), twelve);
    const int last = _mm_extract_epi32(twelve, 2);
    std::memcpy(out + 8, &last, 4);
  }
  return x;
}
#endif

bool cpu_has_avx2() {
#ifdef DETRAIN_WARP_AVX2
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

}  // namespace

bool warp_columns_available(WarpColumns columns) {
  switch (columns) {
    case WarpColumns::avx512:
      return scale_warp_columns::available();
    case WarpColumns::avx2:
      return cpu_has_avx2();
    default:
      return true;
  }
}

bool is_scale_translate(const cv::Matx23d& m) {
  return m(0, 1) == 0 && m(1, 0) == 0 && m(0, 0) > 0 && m(1, 1) > 0;
}

void warp_scaled(const cv::Mat& src, cv::Mat& dst, const cv::Matx23d& m,
                 const ScaleWarpBorder& border, WarpColumns column_pass) {
  CV_Assert(src.type() == CV_8UC3 && dst.type() == CV_8UC3 && !src.empty());
  CV_Assert(is_scale_translate(m));
  if (column_pass == WarpColumns::fastest)
    column_pass = warp_columns_available(WarpColumns::avx512) ? WarpColumns::avx512
                  : warp_columns_available(WarpColumns::avx2) ? WarpColumns::avx2
                                                              : WarpColumns::portable;
  CV_Assert(warp_columns_available(column_pass));
  const int out_w = dst.cols, out_h = dst.rows, src_w = src.cols, src_h = src.rows;
  // warpAffine's inversion of [a 0 c; 0 e f] with its operation order (the zero terms drop out
  // exactly): x_src = ax * x + bx, y_src = ay * y + by.
  double det = m(0, 0) * m(1, 1);
  det = det != 0 ? 1.0 / det : 0.0;
  const double ax = m(1, 1) * det, ay = m(0, 0) * det;
  const double bx = -ax * m(0, 2), by = -(ay * m(1, 2));
  const int x_origin = round_to_int(bx * (1 << kCoordBits)) + kRoundDelta;

  // Per output column: the two source columns (clamped, or the constant slot) and the weight.
  const auto columns = static_cast<size_t>(out_w);
  std::vector<int> col0(columns), col1(columns);  // source columns, then offsets into a row
  std::vector<int> frac_x(columns);
  int lo = src_w, hi = -1;  // source columns actually read
  auto source_col = [&](int i) {
    return border.replicate ? std::clamp(i, 0, src_w - 1) : (i >= 0 && i < src_w ? i : -1);
  };
  for (int x = 0; x < out_w; ++x) {
    const Tap t = tap_of(x_origin + round_to_int(ax * x * (1 << kCoordBits)));
    col0[size_t(x)] = source_col(t.index);
    col1[size_t(x)] = source_col(t.index + 1);
    frac_x[size_t(x)] = t.frac;
    for (const int c : {col0[size_t(x)], col1[size_t(x)]})
      if (c >= 0) lo = std::min(lo, c), hi = std::max(hi, c);
  }
  if (hi < lo) {  // every tap outside a constant border
    dst.setTo(cv::Scalar::all(border.value));
    return;
  }
  const int n = 3 * (hi - lo + 1);  // blended values per row; slot n..n+2 is the constant
  for (int x = 0; x < out_w; ++x) {
    col0[size_t(x)] = col0[size_t(x)] < 0 ? n : 3 * (col0[size_t(x)] - lo);
    col1[size_t(x)] = col1[size_t(x)] < 0 ? n : 3 * (col1[size_t(x)] - lo);
  }
  // The constant slot n..n+2, one value more (the AVX2 column pass reads 4 per pixel) and a
  // window's worth (the AVX-512 one reads 64 from a window's start).
  std::vector<uint16_t> blended(static_cast<size_t>(n + 4 + scale_warp_columns::kWindow),
                                static_cast<uint16_t>(kFracSize * border.value));
  const bool avx2 = column_pass == WarpColumns::avx2;
  const scale_warp_columns::Plan plan = column_pass == WarpColumns::avx512
                                            ? scale_warp_columns::plan(col0, col1, frac_x)
                                            : scale_warp_columns::Plan{};
  std::vector<int> weights(avx2 ? columns : 0);  // (32 - f) | f << 16, the madd pairs
  for (size_t x = 0; x < weights.size(); ++x)
    weights[x] = (kFracSize - frac_x[x]) | (frac_x[x] << 16);
  const std::vector<uint8_t> constant_row(border.replicate ? 0 : static_cast<size_t>(n),
                                          border.value);
  auto source_row = [&](int i) -> const uint8_t* {
    if (border.replicate) i = std::clamp(i, 0, src_h - 1);
    if (i < 0 || i >= src_h) return constant_row.data();
    return src.ptr<uint8_t>(i) + 3 * lo;
  };

  for (int y = 0; y < out_h; ++y) {
    const Tap t = tap_of(round_to_int((ay * y + by) * (1 << kCoordBits)) + kRoundDelta);
    blend_rows(source_row(t.index), source_row(t.index + 1), kFracSize - t.frac, t.frac,
               blended.data(), n);
    uint8_t* out = dst.ptr<uint8_t>(y);
    const uint16_t* v = blended.data();
    if (column_pass == WarpColumns::avx512) {
      scale_warp_columns::blend(plan, v, out);
      continue;
    }
    int x = 0;
#ifdef DETRAIN_WARP_AVX2
    if (avx2) {
      x = blend_columns_avx2(v, col0.data(), col1.data(), weights.data(), out, out_w);
      out += 3 * x;
    }
#endif
    for (; x < out_w; ++x, out += 3) {
      const uint16_t* p = v + col0[size_t(x)];
      const uint16_t* q = v + col1[size_t(x)];
      const int f = frac_x[size_t(x)], g = kFracSize - f;
      constexpr int kHalf = 1 << (kBlendShift - 1);
      out[0] = static_cast<uint8_t>((g * p[0] + f * q[0] + kHalf) >> kBlendShift);
      out[1] = static_cast<uint8_t>((g * p[1] + f * q[1] + kHalf) >> kBlendShift);
      out[2] = static_cast<uint8_t>((g * p[2] + f * q[2] + kHalf) >> kBlendShift);
    }
  }
}

}  // namespace detrain::data
