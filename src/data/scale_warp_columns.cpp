// warp_scaled's column pass with AVX-512; see scale_warp_columns.h. Per 16 output values: two
// loads of the window, one two-source word permute that lays out the (p, q) source pairs, one
// madd with the (g, f) pairs, the rounding shift and a byte narrowing; AVX2's version needs two
// 64-bit gathers per 4 pixels instead, which dominate its time on AMD Zen 4.
#include "data/scale_warp_columns.h"

#include <algorithm>
#include <limits>

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wuninitialized reports
// wherever they inline (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define DETRAIN_WARP_AVX512 1
#endif

namespace detrain::data::scale_warp_columns {

namespace {

constexpr int kFracSize = 32, kBlendShift = 10;

// Output value j's two sources and weights.
struct Sources {
  int p, q, g, f;
};
Sources sources(const Plan& plan, int j) {
  const int x = j / 3, c = j % 3;
  return {plan.col0[x] + c, plan.col1[x] + c, kFracSize - plan.frac[x], plan.frac[x]};
}

// The chunk's values one by one (sources wider than a window; edge columns of a constant
// border, whose slot lies past the row).
void blend_values(const Plan& plan, const uint16_t* v, uint8_t* out, int first, int end) {
  for (int j = first; j < end; ++j) {
    const Sources s = sources(plan, j);
    out[j] = static_cast<uint8_t>((s.g * v[s.p] + s.f * v[s.q] + (1 << (kBlendShift - 1))) >>
                                  kBlendShift);
  }
}

#ifdef DETRAIN_WARP_AVX512
__attribute__((target("avx512f,avx512bw,avx512vl"))) void blend_windows(const Plan& plan,
                                                                        const uint16_t* v,
                                                                        uint8_t* out) {
  const __m512i half = _mm512_set1_epi32(1 << (kBlendShift - 1));
  for (size_t k = 0; k < plan.chunks.size(); ++k) {
    const Chunk& c = plan.chunks[k];
    const int first = 16 * static_cast<int>(k), count = std::min(16, plan.values - first);
    if (c.base < 0) {
      blend_values(plan, v, out, first, first + count);
      continue;
    }
    const __m512i low = _mm512_loadu_si512(v + c.base);
    const __m512i high = _mm512_loadu_si512(v + c.base + 32);
    const __m512i pairs = _mm512_permutex2var_epi16(low, _mm512_load_si512(c.source), high);
    const __m512i sums = _mm512_madd_epi16(pairs, _mm512_load_si512(c.weight));
    const __m128i bytes =
        _mm512_cvtepi32_epi8(_mm512_srli_epi32(_mm512_add_epi32(sums, half), kBlendShift));
    if (count == 16)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + first), bytes);
    else
      _mm_mask_storeu_epi8(out + first, static_cast<__mmask16>((1u << count) - 1), bytes);
  }
}
#endif

}  // namespace

Plan plan(const std::vector<int>& col0, const std::vector<int>& col1,
          const std::vector<int>& frac) {
  Plan p;
  p.col0 = col0.data();
  p.col1 = col1.data();
  p.frac = frac.data();
  p.values = 3 * static_cast<int>(col0.size());
  p.chunks.resize(static_cast<size_t>((p.values + 15) / 16));
  for (size_t k = 0; k < p.chunks.size(); ++k) {
    Chunk& c = p.chunks[k];
    const int first = 16 * static_cast<int>(k), count = std::min(16, p.values - first);
    int lo = std::numeric_limits<int>::max(), hi = std::numeric_limits<int>::min();
    for (int j = first; j < first + count; ++j) {
      const Sources s = sources(p, j);
      lo = std::min({lo, s.p, s.q});
      hi = std::max({hi, s.p, s.q});
    }
    if (hi - lo >= kWindow) {
      c.base = -1;
      continue;
    }
    c.base = lo;
    for (int i = 0; i < 16; ++i) {  // lanes past the row repeat its last value (not stored)
      const Sources s = sources(p, first + std::min(i, count - 1));
      c.source[2 * i] = static_cast<uint16_t>(s.p - lo);
      c.source[2 * i + 1] = static_cast<uint16_t>(s.q - lo);
      c.weight[2 * i] = static_cast<int16_t>(s.g);
      c.weight[2 * i + 1] = static_cast<int16_t>(s.f);
    }
  }
  return p;
}

bool available() {
#ifdef DETRAIN_WARP_AVX512
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

void blend(const Plan& plan, const uint16_t* v, uint8_t* out) {
#ifdef DETRAIN_WARP_AVX512
  blend_windows(plan, v, out);
#else
  blend_values(plan, v, out, 0, plan.values);
#endif
}

}  // namespace detrain::data::scale_warp_columns
