// The fused RandomHSV pass with AVX2 and FMA, 8 pixels per step; see hsv_kernels.h for the
// arithmetic it reproduces. AVX2 has no byte-table lookup, so the tables come by two gathers
// per step, both per image: one by v (OpenCV's saturation divisor and the reference's value
// byte) and one by (h, s) from a 180 x 256 table of the reference's hue and saturation bytes.
// The hue divisor is one float division (equal to OpenCV's table for every diff). The HSV->BGR
// products follow OpenCV's order of operations; the file is compiled with -ffp-contract=off so
// that the compiler adds no contraction of its own. The output channels are picked by one byte
// shuffle per step whose control comes from the sector.
#include "data/hsv_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <cstring>
#include <memory>

#define DETRAIN_AVX2 __attribute__((target("avx2,fma")))

namespace detrain::data::hsv_kernels {

namespace {

// The per-image gather tables.
struct GatherTables {
  // By v: OpenCV's saturation divisor (below 2^20) | the reference's value byte << 24.
  alignas(32) int32_t divisor_value[256];
  // By h * 256 + s: the reference's hue byte | its saturation byte << 8 (92 KB, on the heap),
  // and one entry of padding, since the gather reads 4 bytes.
  static constexpr size_t kHueSatEntries = 180 * 256 + 1;
  std::unique_ptr<uint16_t[]> hue_sat{new uint16_t[kHueSatEntries]};
};

void fill(GatherTables& g, const HsvTables& t) {
  for (int v = 0; v < 256; ++v)
    g.divisor_value[v] = static_cast<int32_t>(static_cast<uint32_t>(sat_divisor(v)) |
                                              static_cast<uint32_t>(t.val[v]) << 24);
  for (int h = 0; h < 180; ++h) {
    uint16_t* row = g.hue_sat.get() + 256 * h;
    for (int s = 0; s < 256; ++s) row[s] = static_cast<uint16_t>(t.hue[h] | t.sat[s] << 8);
  }
  g.hue_sat[GatherTables::kHueSatEntries - 1] = 0;
}

// Per sector: the byte offsets of the output B, G and R among the packed tab[0] (0), tab[1] (4)
// and tab[2|3] (8) of a pixel; the fourth byte clears.
constexpr int32_t control(int b, int g, int r) {
  return static_cast<int32_t>(b | g << 8 | r << 16 | 0x80u << 24);
}
constexpr int kTabOffset[4] = {0, 4, 8, 8};
constexpr int32_t sector_control(int sector) {
  return control(kTabOffset[kSectorSources[sector][0]], kTabOffset[kSectorSources[sector][1]],
                 kTabOffset[kSectorSources[sector][2]]);
}

// 8 pixels at p. kScalar: OpenCV's scalar rounding (the row's remainder), else its vector
// kernel's.
template <bool kScalar>
DETRAIN_AVX2 inline void step(uint8_t* p, const GatherTables& t) {
  // Byte positions of the B, G and R of 8 interleaved pixels: 0-5 from the first 16 bytes,
  // 6-7 from the next 8.
  const __m128i b_lo = _mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i g_lo = _mm_setr_epi8(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i r_lo = _mm_setr_epi8(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i b_hi = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, 2, 5, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i g_hi = _mm_setr_epi8(-1, -1, -1, -1, -1, 0, 3, 6, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i r_hi = _mm_setr_epi8(-1, -1, -1, -1, -1, 1, 4, 7, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i hi = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 16));
  const __m256i b =
      _mm256_cvtepu8_epi32(_mm_or_si128(_mm_shuffle_epi8(lo, b_lo), _mm_shuffle_epi8(hi, b_hi)));
  const __m256i g =
      _mm256_cvtepu8_epi32(_mm_or_si128(_mm_shuffle_epi8(lo, g_lo), _mm_shuffle_epi8(hi, g_hi)));
  const __m256i r =
      _mm256_cvtepu8_epi32(_mm_or_si128(_mm_shuffle_epi8(lo, r_lo), _mm_shuffle_epi8(hi, r_hi)));

  // BGR -> HSV, OpenCV's integer formula. diff = 0 divides by zero; its product with h' = 0
  // is 0, as OpenCV's zero table entry gives.
  const __m256i round_half = _mm256_set1_epi32(1 << 11);
  const __m256i v = _mm256_max_epi32(b, _mm256_max_epi32(g, r));
  const __m256i diff = _mm256_sub_epi32(v, _mm256_min_epi32(b, _mm256_min_epi32(g, r)));
  const __m256i divisor_value = _mm256_i32gather_epi32(t.divisor_value, v, 4);
  const __m256i sat_div = _mm256_and_si256(divisor_value, _mm256_set1_epi32(0xFFFFFF));
  const __m256i s =
      _mm256_srai_epi32(_mm256_add_epi32(_mm256_mullo_epi32(diff, sat_div), round_half), 12);
  const __m256i hue_div =
      _mm256_cvtps_epi32(_mm256_div_ps(_mm256_set1_ps(122880.0f), _mm256_cvtepi32_ps(diff)));
  const __m256i v_is_r = _mm256_cmpeq_epi32(v, r), v_is_g = _mm256_cmpeq_epi32(v, g);
  const __m256i h_r = _mm256_sub_epi32(g, b);
  const __m256i h_g = _mm256_add_epi32(_mm256_sub_epi32(b, r), _mm256_slli_epi32(diff, 1));
  const __m256i h_b = _mm256_add_epi32(_mm256_sub_epi32(r, g), _mm256_slli_epi32(diff, 2));
  __m256i h = _mm256_blendv_epi8(_mm256_blendv_epi8(h_b, h_g, v_is_g), h_r, v_is_r);
  h = _mm256_srai_epi32(_mm256_add_epi32(_mm256_mullo_epi32(h, hue_div), round_half), 12);
  h = _mm256_add_epi32(
      h, _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), h), _mm256_set1_epi32(180)));

  // The reference's tables (h < 180: see hsv_kernels.h), then HSV -> BGR in float.
  const __m256i hue_sat = _mm256_i32gather_epi32(reinterpret_cast<const int*>(t.hue_sat.get()),
                                                 _mm256_or_si256(_mm256_slli_epi32(h, 8), s), 2);
  const __m256i byte = _mm256_set1_epi32(255);
  const __m256 one = _mm256_set1_ps(1.0f), inv255 = _mm256_set1_ps(1.0f / 255.0f);
  const __m256 hue =
      _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_and_si256(hue_sat, byte)), _mm256_set1_ps(kHueScale));
  const __m256 sf = _mm256_mul_ps(
      _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(hue_sat, 8), byte)), inv255);
  const __m256 vf = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(divisor_value, 24)), inv255);
  const __m256i sector = _mm256_cvttps_epi32(hue);
  const __m256 f = _mm256_sub_ps(hue, _mm256_cvtepi32_ps(sector));
  // Even sectors take tab[3] = v (1 - s (1 - f)), odd ones tab[2] = v (1 - s f).
  const __m256 odd = _mm256_castsi256_ps(_mm256_slli_epi32(sector, 31));
  const __m256 f23 = _mm256_blendv_ps(_mm256_sub_ps(one, f), f, odd);
  __m256 tab23 = _mm256_mul_ps(vf, _mm256_fnmadd_ps(sf, f23, one));
  const __m256 tab1 = _mm256_mul_ps(vf, _mm256_sub_ps(one, sf));
  const __m256 times255 = _mm256_set1_ps(255.0f);
  __m256i out0, out1, out23;
  if constexpr (kScalar) {  // s (1 - f) uncontracted, results rounded to nearest even
    const __m256 tab3 = _mm256_mul_ps(vf, _mm256_sub_ps(one, _mm256_mul_ps(sf, f23)));
    tab23 = _mm256_blendv_ps(tab3, tab23, odd);
    out0 = _mm256_cvtps_epi32(_mm256_mul_ps(vf, times255));
    out1 = _mm256_cvtps_epi32(_mm256_mul_ps(tab1, times255));
    out23 = _mm256_cvtps_epi32(_mm256_mul_ps(tab23, times255));
  } else {
    out0 = _mm256_cvttps_epi32(_mm256_mul_ps(vf, times255));
    out1 = _mm256_cvttps_epi32(_mm256_mul_ps(tab1, times255));
    out23 = _mm256_cvttps_epi32(_mm256_mul_ps(tab23, times255));
  }

  // tab[0] | tab[1] | tab[2|3] | again as bytes, 4 pixels of each per 128-bit lane; each pixel's
  // B, G, R picked by its sector's control (plus the pixel's place in its lane), then packed to
  // 24 bytes and written exactly (the pass runs in place).
  const __m256i tabs =
      _mm256_packus_epi16(_mm256_packus_epi32(out0, out1), _mm256_packus_epi32(out23, out23));
  const __m256i controls =
      _mm256_setr_epi32(sector_control(0), sector_control(1), sector_control(2), sector_control(3),
                        sector_control(4), sector_control(5), 0, 0);
  const __m256i place =
      _mm256_setr_epi32(0, 0x010101, 0x020202, 0x030303, 0, 0x010101, 0x020202, 0x030303);
  const __m256i picked = _mm256_shuffle_epi8(
      tabs, _mm256_add_epi32(_mm256_permutevar8x32_epi32(controls, sector), place));
  const __m256i compress = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1,
                                            0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  const __m256i pixels = _mm256_shuffle_epi8(picked, compress);
  const __m128i first = _mm256_castsi256_si128(pixels);
  const __m128i second = _mm256_extracti128_si256(pixels, 1);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm_or_si128(first, _mm_slli_si128(second, 12)));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p + 16), _mm_srli_si128(second, 4));
}

DETRAIN_AVX2 void fused_row(uint8_t* p, int width, const GatherTables& t) {
  const int vector = opencv_vector_pixels(width);  // a multiple of 8
  int x = 0;
  for (; x < vector; x += 8, p += 24) step<false>(p, t);
  for (; x + 8 <= width; x += 8, p += 24) step<true>(p, t);
  if (x == width) return;
  // The last 1-7 pixels through a buffer of 8 (the rest zeros, results dropped).
  uint8_t last[24] = {};
  const size_t bytes = 3 * static_cast<size_t>(width - x);
  std::memcpy(last, p, bytes);
  step<true>(last, t);
  std::memcpy(p, last, bytes);
}

}  // namespace

void fused_avx2(cv::Mat& bgr, const HsvTables& tables) {
  GatherTables t;
  fill(t, tables);
  for (int y = 0; y < bgr.rows; ++y) fused_row(bgr.ptr<uint8_t>(y), bgr.cols, t);
}

}  // namespace detrain::data::hsv_kernels

#endif
