// The fused RandomHSV pass with AVX-512 (F, BW, VBMI), 64 pixels per step; see hsv_kernels.h
// for the arithmetic it reproduces. Byte work stays in bytes: every table (the reference's
// three, OpenCV's two reciprocal tables split into bytes, and the output choices) is a 256-byte
// lookup by two VBMI permutes of 128 bytes, and the integer BGR->HSV runs in 16-bit lanes, where
// x * divisor rounded >> 12 is x * (divisor >> 12) + mulhrs(x, (divisor & 4095) * 8), exactly.
// Only the HSV->BGR products are float, 16 lanes at a time, in OpenCV's order of operations.
// The functions carry target attributes rather than the file -m flags, so that no inline code
// this file shares with others (std::, OpenCV headers) is compiled for AVX-512.
#include "data/hsv_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wuninitialized reports
// wherever they inline (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#define DETRAIN_AVX512 __attribute__((target("avx512f,avx512bw,avx512vbmi")))

namespace detrain::data::hsv_kernels {

namespace {

// Byte permutations between 64 interleaved pixels (192 bytes, three registers) and three
// channel registers, and the spread of 16 bytes to the low bytes of 16 dwords.
struct Shuffles {
  // Channel c of pixel i is byte 3i + c: from the first two registers (one two-source permute)
  // or, for the lanes in `from_third`, from the third.
  alignas(64) uint8_t gather_first_two[3][64]{};
  alignas(64) uint8_t gather_third[3][64]{};
  uint64_t from_third[3]{};
  // Output register k byte m is pixel (64k + m) / 3, channel (64k + m) % 3: B or G from the
  // first two channel registers, R (lanes in `from_red`) from the third.
  alignas(64) uint8_t scatter_blue_green[3][64]{};
  alignas(64) uint8_t scatter_red[3][64]{};
  uint64_t from_red[3]{};
  // Dword m of quarter q takes pixel 16 (m / 4) + 4q + m % 4: the order in which two rounds of
  // in-lane packs (32 -> 16 -> 8 bits) put the quarters back in pixel order.
  alignas(64) uint8_t quarter[4][64]{};
};

constexpr Shuffles make_shuffles() {
  Shuffles s;
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 64; ++i) {
      const int in = 3 * i + c, out = 64 * c + i, pixel = out / 3, channel = out % 3;
      s.gather_first_two[c][i] = static_cast<uint8_t>(in < 128 ? in : 0);
      s.gather_third[c][i] = static_cast<uint8_t>(in >= 128 ? in - 128 : 0);
      if (in >= 128) s.from_third[c] |= uint64_t{1} << i;
      s.scatter_blue_green[c][i] = static_cast<uint8_t>(channel == 1 ? 64 + pixel : pixel);
      s.scatter_red[c][i] = static_cast<uint8_t>(pixel);
      if (channel == 2) s.from_red[c] |= uint64_t{1} << i;
    }
  for (int q = 0; q < 4; ++q)
    for (int m = 0; m < 16; ++m)
      s.quarter[q][4 * m] = static_cast<uint8_t>(16 * (m / 4) + 4 * q + m % 4);
  return s;
}

alignas(64) constexpr Shuffles kShuffles = make_shuffles();

// Bits of the output choice byte: B takes tab[0] (bit 0) or tab[2|3] (bit 1), else tab[1]; G
// bits 2-3, R bits 4-5.
constexpr int kTakesValue = 1, kTakesTab23 = 2;

// The per-image byte tables, each 256 entries in four registers' worth.
struct ByteTables {
  alignas(64) uint8_t hue[256], sat[256], val[256];
  alignas(64) uint8_t value_truncated[256], value_rounded[256];
  alignas(64) uint8_t choice[256];  // by the hue before the table: which tab each channel takes
  // OpenCV's reciprocal tables split: divisor >> 12, and (divisor & 4095) * 8 as low, high byte.
  alignas(64) uint8_t sat_high[256], sat_low_lo[256], sat_low_hi[256];
  alignas(64) uint8_t hue_high[256], hue_low_lo[256], hue_low_hi[256];
};

ByteTables make_tables(const HsvTables& t) {
  ByteTables b;
  for (int i = 0; i < 256; ++i) {
    const auto x = static_cast<uint8_t>(i);
    b.hue[i] = t.hue[i];
    b.sat[i] = t.sat[i];
    b.val[i] = t.val[i];
    b.value_truncated[i] = value_truncated(t.val[i]);
    b.value_rounded[i] = value_rounded(t.val[i]);
    int choice = 0;
    if (i < 180) {  // OpenCV's hue never reaches 180; apply_hsv_fused checked the table below it
      const int* sources = kSectorSources[hue_sector(t.hue[i])];
      for (int c = 0; c < 3; ++c) {
        if (sources[c] == 0) choice |= kTakesValue << (2 * c);
        if (sources[c] >= 2) choice |= kTakesTab23 << (2 * c);
      }
    }
    b.choice[i] = static_cast<uint8_t>(choice);
    const int sat_low = (sat_divisor(x) & 4095) * 8, hue_low = (hue_divisor(x) & 4095) * 8;
    b.sat_high[i] = static_cast<uint8_t>(sat_divisor(x) >> 12);
    b.sat_low_lo[i] = static_cast<uint8_t>(sat_low & 255);
    b.sat_low_hi[i] = static_cast<uint8_t>(sat_low >> 8);
    b.hue_high[i] = static_cast<uint8_t>(hue_divisor(x) >> 12);
    b.hue_low_lo[i] = static_cast<uint8_t>(hue_low & 255);
    b.hue_low_hi[i] = static_cast<uint8_t>(hue_low >> 8);
  }
  return b;
}

// table[index] for 64 byte indices; `high` is the indices' bit 7 (shared by the lookups of one
// index vector).
DETRAIN_AVX512 inline __m512i lookup(const uint8_t* table, __m512i index, __mmask64 high) {
  const __m512i low_half =
      _mm512_permutex2var_epi8(_mm512_load_si512(table), index, _mm512_load_si512(table + 64));
  const __m512i high_half = _mm512_permutex2var_epi8(_mm512_load_si512(table + 128), index,
                                                     _mm512_load_si512(table + 192));
  return _mm512_mask_blend_epi8(high, low_half, high_half);
}

// Bytes 0-7 (half 0) or 8-15 (half 1) of each 128-bit lane as 16-bit lanes, the low byte from
// `low`, the high byte from `high`.
DETRAIN_AVX512 inline __m512i widen(__m512i low, __m512i high, int half) {
  return half == 0 ? _mm512_unpacklo_epi8(low, high) : _mm512_unpackhi_epi8(low, high);
}

// x * divisor, rounded, >> 12 for 16-bit x, the divisor as its two table parts.
DETRAIN_AVX512 inline __m512i times_divisor(__m512i x, __m512i high, __m512i low_times_8) {
  return _mm512_add_epi16(_mm512_mullo_epi16(x, high), _mm512_mulhrs_epi16(x, low_times_8));
}

// The bytes of `x` that one quarter shuffle picks, zero-extended to dwords (pack_quarters puts
// them back).
DETRAIN_AVX512 inline __m512i quarter_dwords(__m512i x, __m512i quarter) {
  return _mm512_maskz_permutexvar_epi8(0x1111111111111111ull, quarter, x);
}
DETRAIN_AVX512 inline __m512 quarter_float(__m512i x, __m512i quarter) {
  return _mm512_cvtepi32_ps(quarter_dwords(x, quarter));
}

// Four quarters of dwords (0..255) back to 64 bytes in pixel order.
DETRAIN_AVX512 inline __m512i pack_quarters(const __m512i q[4]) {
  return _mm512_packus_epi16(_mm512_packus_epi32(q[0], q[1]), _mm512_packus_epi32(q[2], q[3]));
}

// x * 255 to an integer: truncated, and in the lanes of `rounded` rounded to nearest even.
template <bool kPartial>
DETRAIN_AVX512 inline __m512i times_255(__m512 x, __mmask16 rounded) {
  const __m512 y = _mm512_mul_ps(x, _mm512_set1_ps(255.0f));
  if constexpr (!kPartial) return _mm512_cvttps_epi32(y);
  return _mm512_mask_mov_epi32(
      _mm512_cvttps_epi32(y), rounded,
      _mm512_cvt_roundps_epi32(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// Bytes [0, bytes) of a 64-byte register at offset `start`.
inline __mmask64 byte_mask(int bytes, int start) {
  const int n = bytes - start;
  return n >= 64 ? ~__mmask64{0} : n <= 0 ? 0 : (__mmask64{1} << n) - 1;
}

// 64 pixels at p. kPartial: only the first `count` pixels exist, and the lanes in `scalar`
// take OpenCV's scalar rounding (the rest its vector kernel's).
template <bool kPartial>
DETRAIN_AVX512 inline void block(uint8_t* p, const ByteTables& t, int count, __mmask64 scalar) {
  const Shuffles& s = kShuffles;
  __m512i in[3];
  for (int k = 0; k < 3; ++k)
    in[k] = kPartial ? _mm512_maskz_loadu_epi8(byte_mask(3 * count, 64 * k), p + 64 * k)
                     : _mm512_loadu_si512(p + 64 * k);
  __m512i bgr[3];
  for (int c = 0; c < 3; ++c) {
    const __m512i two =
        _mm512_permutex2var_epi8(in[0], _mm512_load_si512(s.gather_first_two[c]), in[1]);
    bgr[c] = _mm512_mask_permutexvar_epi8(two, s.from_third[c],
                                          _mm512_load_si512(s.gather_third[c]), in[2]);
  }
  const __m512i b = bgr[0], g = bgr[1], r = bgr[2];

  // BGR -> HSV in 16-bit lanes, two halves of 32 pixels.
  const __m512i v = _mm512_max_epu8(b, _mm512_max_epu8(g, r));
  const __m512i diff = _mm512_sub_epi8(v, _mm512_min_epu8(b, _mm512_min_epu8(g, r)));
  const __mmask64 v_high = _mm512_movepi8_mask(v), diff_high = _mm512_movepi8_mask(diff);
  const __m512i sat_high = lookup(t.sat_high, v, v_high);
  const __m512i sat_low_lo = lookup(t.sat_low_lo, v, v_high);
  const __m512i sat_low_hi = lookup(t.sat_low_hi, v, v_high);
  const __m512i hue_high = lookup(t.hue_high, diff, diff_high);
  const __m512i hue_low_lo = lookup(t.hue_low_lo, diff, diff_high);
  const __m512i hue_low_hi = lookup(t.hue_low_hi, diff, diff_high);
  const __m512i zero = _mm512_setzero_si512();
  __m512i h16[2], s16[2];
  for (int half = 0; half < 2; ++half) {
    const __m512i b16 = widen(b, zero, half), g16 = widen(g, zero, half);
    const __m512i r16 = widen(r, zero, half), v16 = widen(v, zero, half);
    const __m512i d16 = widen(diff, zero, half);
    const __m512i h_r = _mm512_sub_epi16(g16, b16);
    const __m512i h_g = _mm512_add_epi16(_mm512_sub_epi16(b16, r16), _mm512_add_epi16(d16, d16));
    const __m512i h_b = _mm512_add_epi16(_mm512_sub_epi16(r16, g16), _mm512_slli_epi16(d16, 2));
    const __m512i h_raw = _mm512_mask_blend_epi16(
        _mm512_cmpeq_epi16_mask(v16, r16),
        _mm512_mask_blend_epi16(_mm512_cmpeq_epi16_mask(v16, g16), h_b, h_g), h_r);
    __m512i h =
        times_divisor(h_raw, widen(hue_high, zero, half), widen(hue_low_lo, hue_low_hi, half));
    h16[half] = _mm512_mask_add_epi16(h, _mm512_movepi16_mask(h), h, _mm512_set1_epi16(180));
    s16[half] =
        times_divisor(d16, widen(sat_high, zero, half), widen(sat_low_lo, sat_low_hi, half));
  }
  const __m512i h = _mm512_packus_epi16(h16[0], h16[1]);
  const __m512i sat = _mm512_packus_epi16(s16[0], s16[1]);

  // The reference's tables, then HSV -> BGR: tab[0] by table, tab[1] and tab[2|3] in float.
  const __mmask64 h_high = _mm512_movepi8_mask(h), s_high = _mm512_movepi8_mask(sat);
  const __m512i hue2 = lookup(t.hue, h, h_high), sat2 = lookup(t.sat, sat, s_high);
  const __m512i val2 = lookup(t.val, v, v_high), choice = lookup(t.choice, h, h_high);
  __m512i tab0 = lookup(t.value_truncated, v, v_high);
  if constexpr (kPartial)
    tab0 = _mm512_mask_mov_epi8(tab0, scalar, lookup(t.value_rounded, v, v_high));
  const __m512 one = _mm512_set1_ps(1.0f), inv255 = _mm512_set1_ps(1.0f / 255.0f);
  __m512i tab1_q[4], tab23_q[4];
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    const __m512i quarter = _mm512_load_si512(s.quarter[q]);
    const __m512 hue = _mm512_mul_ps(quarter_float(hue2, quarter), _mm512_set1_ps(kHueScale));
    const __m512 sf = _mm512_mul_ps(quarter_float(sat2, quarter), inv255);
    const __m512 vf = _mm512_mul_ps(quarter_float(val2, quarter), inv255);
    const __m512i sector = _mm512_cvttps_epi32(hue);
    const __m512 f = _mm512_sub_ps(hue, _mm512_cvtepi32_ps(sector));
    // Even sectors take tab[3] = v (1 - s (1 - f)), odd ones tab[2] = v (1 - s f).
    const __mmask16 even = _mm512_testn_epi32_mask(sector, _mm512_set1_epi32(1));
    const __m512 f23 = _mm512_mask_sub_ps(f, even, one, f);
    __m512 tab23 = _mm512_mul_ps(vf, _mm512_fnmadd_ps(sf, f23, one));
    const __m512 tab1 = _mm512_mul_ps(vf, _mm512_sub_ps(one, sf));
    __mmask16 rounded = 0;
    if constexpr (kPartial) {  // the scalar code leaves s (1 - f) uncontracted
      rounded = _mm512_test_epi32_mask(quarter_dwords(_mm512_movm_epi8(scalar), quarter),
                                       _mm512_set1_epi32(1));
      const __m512 tab3 = _mm512_mul_ps(vf, _mm512_sub_ps(one, _mm512_mul_ps(sf, f23)));
      tab23 = _mm512_mask_mov_ps(tab23, rounded & even, tab3);
    }
    tab23_q[q] = times_255<kPartial>(tab23, rounded);
    tab1_q[q] = times_255<kPartial>(tab1, rounded);
  }
  const __m512i tab1 = pack_quarters(tab1_q), tab23 = pack_quarters(tab23_q);
  __m512i out[3];
  for (int c = 0; c < 3; ++c) {
    const __mmask64 takes_value =
        _mm512_test_epi8_mask(choice, _mm512_set1_epi8(static_cast<char>(kTakesValue << (2 * c))));
    const __mmask64 takes_tab23 =
        _mm512_test_epi8_mask(choice, _mm512_set1_epi8(static_cast<char>(kTakesTab23 << (2 * c))));
    out[c] =
        _mm512_mask_blend_epi8(takes_tab23, _mm512_mask_blend_epi8(takes_value, tab1, tab0), tab23);
  }
  for (int k = 0; k < 3; ++k) {
    const __m512i blue_green =
        _mm512_permutex2var_epi8(out[0], _mm512_load_si512(s.scatter_blue_green[k]), out[1]);
    const __m512i bytes = _mm512_mask_permutexvar_epi8(blue_green, s.from_red[k],
                                                       _mm512_load_si512(s.scatter_red[k]), out[2]);
    if (kPartial)
      _mm512_mask_storeu_epi8(p + 64 * k, byte_mask(3 * count, 64 * k), bytes);
    else
      _mm512_storeu_si512(p + 64 * k, bytes);
  }
}

DETRAIN_AVX512 void fused_row(uint8_t* p, int width, const ByteTables& t) {
  int x = 0;
  for (; x + 64 <= width; x += 64, p += 192) block<false>(p, t, 64, 0);
  if (x == width) return;
  // The last (width - x) < 64 pixels: OpenCV's vector kernel still takes the first 0 or 32.
  const int count = width - x, vector = opencv_vector_pixels(width) - x;
  const __mmask64 scalar = ((__mmask64{1} << count) - 1) & ~((__mmask64{1} << vector) - 1);
  block<true>(p, t, count, scalar);
}

}  // namespace

void fused_avx512(cv::Mat& bgr, const HsvTables& tables) {
  const ByteTables t = make_tables(tables);
  for (int y = 0; y < bgr.rows; ++y) fused_row(bgr.ptr<uint8_t>(y), bgr.cols, t);
}

}  // namespace detrain::data::hsv_kernels

#endif
