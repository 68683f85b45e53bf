// The fused RandomHSV pass; see hsv.h. Per 8 pixels: OpenCV's integer BGR->HSV (its division
// tables are exactly round(255*4096 / v) and round(180*4096 / (6 diff)), computed here by one
// float division each, equal for every v and diff), the reference's tables, then OpenCV's AVX2
// HSV->BGR float arithmetic op for op: its build contracts v*(1 - s*h) and v*(1 - s*(1-h)) into
// fused multiply-adds and truncates the *255 result, so this file does the same explicitly and
// is compiled with -ffp-contract=off so that the compiler adds no other contraction.
// Saturation and value tables are gathered as floats already divided by 255 and the hue table
// already times 6/180, the very products OpenCV forms.
#include "data/hsv.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define DETRAIN_HSV_AVX2 1
#endif

namespace detrain::data {

#ifdef DETRAIN_HSV_AVX2
namespace {

struct FloatTables {
  float hue[256], sat[256], val[256];  // hue * 6/180; sat / 255; val / 255 (OpenCV's products)
};

#define DETRAIN_AVX2 __attribute__((target("avx2,fma")))

// OpenCV's sector table {b, g, r} <- tab[...] per sector 0..5 as three index vectors, and the
// choice among the four tab vectors by a 2-bit index per lane.
DETRAIN_AVX2 inline __m256 pick(__m256 t0, __m256 t1, __m256 t2, __m256 t3, __m256i index) {
  const __m256 bit0 = _mm256_castsi256_ps(_mm256_slli_epi32(index, 31));
  const __m256 bit1 = _mm256_castsi256_ps(_mm256_slli_epi32(index, 30));
  return _mm256_blendv_ps(_mm256_blendv_ps(t0, t1, bit0), _mm256_blendv_ps(t2, t3, bit0), bit1);
}

// One output channel: OpenCV's tab entry for each lane's sector, times 255, truncated.
DETRAIN_AVX2 inline __m256i channel(__m256 t0, __m256 t1, __m256 t2, __m256 t3,
                                    __m256i index_of_sector, __m256i sector) {
  const __m256 c = pick(t0, t1, t2, t3, _mm256_permutevar8x32_epi32(index_of_sector, sector));
  return _mm256_cvttps_epi32(_mm256_mul_ps(c, _mm256_set1_ps(255.0f)));
}

DETRAIN_AVX2 void fused_row(uint8_t* p, int width, const FloatTables& t) {
  // Byte positions of the B, G and R of 8 interleaved pixels: 0-5 from the first 16 bytes,
  // 6-7 from the next 8.
  const __m128i b_lo = _mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i g_lo = _mm_setr_epi8(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i r_lo = _mm_setr_epi8(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i b_hi = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, 2, 5, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i g_hi = _mm_setr_epi8(-1, -1, -1, -1, -1, 0, 3, 6, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i r_hi = _mm_setr_epi8(-1, -1, -1, -1, -1, 1, 4, 7, -1, -1, -1, -1, -1, -1, -1, -1);
  // Four pixels' B0-3 G0-3 R0-3 (per 128-bit lane) back to B G R order.
  const __m256i interleave = _mm256_setr_epi8(0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, -1, -1, -1, -1,
                                              0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, -1, -1, -1, -1);
  const __m256i sector_b = _mm256_setr_epi32(1, 1, 3, 0, 0, 2, 0, 0);
  const __m256i sector_g = _mm256_setr_epi32(3, 0, 0, 2, 1, 1, 0, 0);
  const __m256i sector_r = _mm256_setr_epi32(0, 2, 1, 1, 3, 0, 0, 0);
  const __m256i round_half = _mm256_set1_epi32(1 << 11), hue_range = _mm256_set1_epi32(180);
  const __m256 one = _mm256_set1_ps(1.0f);
  // (255 << 12) / v and (180 << 12) / (6 diff) = 122880 / diff.
  const __m256 sat_scale = _mm256_set1_ps(255 << 12), hue_scale = _mm256_set1_ps(122880.0f);
  for (int x = 0; x < width; x += 8, p += 24) {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i hi = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 16));
    const __m256i b =
        _mm256_cvtepu8_epi32(_mm_or_si128(_mm_shuffle_epi8(lo, b_lo), _mm_shuffle_epi8(hi, b_hi)));
    const __m256i g =
        _mm256_cvtepu8_epi32(_mm_or_si128(_mm_shuffle_epi8(lo, g_lo), _mm_shuffle_epi8(hi, g_hi)));
    const __m256i r =
        _mm256_cvtepu8_epi32(_mm_or_si128(_mm_shuffle_epi8(lo, r_lo), _mm_shuffle_epi8(hi, r_hi)));

    // BGR -> HSV, OpenCV's integer formula (v = 0 or diff = 0 give a division by zero whose
    // product with diff = 0, or with h = 0, is 0, as OpenCV's zero table entry gives).
    const __m256i v = _mm256_max_epi32(b, _mm256_max_epi32(g, r));
    const __m256i diff = _mm256_sub_epi32(v, _mm256_min_epi32(b, _mm256_min_epi32(g, r)));
    const __m256i sdiv = _mm256_cvtps_epi32(_mm256_div_ps(sat_scale, _mm256_cvtepi32_ps(v)));
    const __m256i hdiv = _mm256_cvtps_epi32(_mm256_div_ps(hue_scale, _mm256_cvtepi32_ps(diff)));
    const __m256i s =
        _mm256_srai_epi32(_mm256_add_epi32(_mm256_mullo_epi32(diff, sdiv), round_half), 12);
    const __m256i v_is_r = _mm256_cmpeq_epi32(v, r), v_is_g = _mm256_cmpeq_epi32(v, g);
    const __m256i h_r = _mm256_sub_epi32(g, b);
    const __m256i h_g = _mm256_add_epi32(_mm256_sub_epi32(b, r), _mm256_slli_epi32(diff, 1));
    const __m256i h_b = _mm256_add_epi32(_mm256_sub_epi32(r, g), _mm256_slli_epi32(diff, 2));
    __m256i h = _mm256_blendv_epi8(_mm256_blendv_epi8(h_b, h_g, v_is_g), h_r, v_is_r);
    h = _mm256_srai_epi32(_mm256_add_epi32(_mm256_mullo_epi32(h, hdiv), round_half), 12);
    h = _mm256_add_epi32(
        h, _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), h), hue_range));

    // The tables, then HSV -> BGR. Hue table entries are below 180, so h * 6/180 < 6 and its
    // integer part is the sector itself (OpenCV's "minus 6 * trunc(pre / 6)" leaves it).
    const __m256 hf = _mm256_i32gather_ps(t.hue, h, 4);
    const __m256 sf = _mm256_i32gather_ps(t.sat, s, 4);
    const __m256 vf = _mm256_i32gather_ps(t.val, v, 4);
    const __m256i sector = _mm256_cvttps_epi32(hf);
    const __m256 frac = _mm256_sub_ps(hf, _mm256_cvtepi32_ps(sector));
    const __m256 t0 = vf;
    const __m256 t1 = _mm256_mul_ps(vf, _mm256_sub_ps(one, sf));
    const __m256 t2 = _mm256_mul_ps(vf, _mm256_fnmadd_ps(sf, frac, one));
    const __m256 t3 = _mm256_mul_ps(vf, _mm256_fnmadd_ps(sf, _mm256_sub_ps(one, frac), one));
    const __m256i ob = channel(t0, t1, t2, t3, sector_b, sector);
    const __m256i og = channel(t0, t1, t2, t3, sector_g, sector);
    const __m256i orr = channel(t0, t1, t2, t3, sector_r, sector);

    // Back to 8 interleaved pixels: 24 bytes, written exactly (the pass runs in place).
    const __m256i bytes =
        _mm256_packus_epi16(_mm256_packus_epi32(ob, og), _mm256_packus_epi32(orr, orr));
    const __m256i pixels = _mm256_shuffle_epi8(bytes, interleave);
    const __m128i first = _mm256_castsi256_si128(pixels);
    const __m128i second = _mm256_extracti128_si256(pixels, 1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm_or_si128(first, _mm_slli_si128(second, 12)));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p + 16), _mm_srli_si128(second, 4));
  }
}

}  // namespace
#endif

bool apply_hsv_fused(cv::Mat& bgr, const HsvTables& tables) {
#ifdef DETRAIN_HSV_AVX2
  // OpenCV's AVX2 kernels work in blocks of 32 pixels per row and finish a row's remainder with
  // scalar code that rounds differently; only whole blocks are reproduced.
  if (bgr.type() != CV_8UC3 || bgr.cols % 32 != 0 || bgr.empty()) return false;
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return false;
  FloatTables t;
  for (int x = 0; x < 256; ++x) {
    t.hue[x] = static_cast<float>(tables.hue[x]) * (6.0f / 180);
    t.sat[x] = static_cast<float>(tables.sat[x]) * (1.0f / 255.0f);
    t.val[x] = static_cast<float>(tables.val[x]) * (1.0f / 255.0f);
  }
  for (int y = 0; y < bgr.rows; ++y) fused_row(bgr.ptr<uint8_t>(y), bgr.cols, t);
  return true;
#else
  (void)bgr;
  (void)tables;
  return false;
#endif
}

}  // namespace detrain::data
