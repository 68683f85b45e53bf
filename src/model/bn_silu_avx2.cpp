// The fused BatchNorm + SiLU kernels with AVX2 and FMA, 8 floats a step; see bn_silu_loops.h for
// the loops and bn_silu_avx512.cpp for the arithmetic, which this file repeats with AVX2's
// means: no masked loads of 16-bit data and no scalef, so vector tails go through a small
// buffer and 2^k is built in the exponent bits. Compiled under a target pragma, as the AVX-512
// file, and dispatched by CPU.
#include <cstdint>

#include "model/bn_silu_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include "model/bn_silu_loops.h"

namespace detrain::model::bn_silu {
namespace {

struct Avx2Vector {
  using F = __m256;
  static constexpr int kWidth = 8;
  static __m256i lanes(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static F zero() { return _mm256_setzero_ps(); }
  static F set1(float v) { return _mm256_set1_ps(v); }
  static F load(const float* p, int n) {
    return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, lanes(n));
  }
  static F load(const uint16_t* p, int n) {
    __m128i half;
    if (n >= 8) {
      half = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    } else {
      alignas(16) uint16_t tail[8] = {};
      for (int i = 0; i < n; ++i) tail[i] = p[i];
      half = _mm_load_si128(reinterpret_cast<const __m128i*>(tail));
    }
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(half), 16));
  }
  static void store(float* p, F v, int n) {
    if (n >= 8)
      _mm256_storeu_ps(p, v);
    else
      _mm256_maskstore_ps(p, lanes(n), v);
  }
  // Round to nearest even; NaN lanes become the quiet NaN 0x7fc0.
  static void store(uint16_t* p, F v, int n) {
    const __m256i bits = _mm256_castps_si256(v);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    __m256i rounded = _mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7fff)), odd);
    rounded = _mm256_srli_epi32(rounded, 16);
    const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    rounded = _mm256_castps_si256(_mm256_blendv_ps(
        _mm256_castsi256_ps(rounded), _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc0)), nan));
    // 32 -> 16 bits within each 128-bit half, then the two halves' low quadwords together.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(rounded, rounded), 0x08);
    const __m128i half = _mm256_castsi256_si128(packed);
    if (n >= 8) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p), half);
    } else {
      alignas(16) uint16_t tail[8];
      _mm_store_si128(reinterpret_cast<__m128i*>(tail), half);
      for (int i = 0; i < n; ++i) p[i] = tail[i];
    }
  }
  static F keep(F v, int n) { return n >= 8 ? v : _mm256_and_ps(v, _mm256_castsi256_ps(lanes(n))); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  // e^x (bn_silu_loops.h's exp_reduced), x clamped to [-87, 88] so that 2^k (k in
  // [-126, 127]) is a normal float made from its exponent bits.
  static F exp(F x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
    const F k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i exponent =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(exp_reduced<Avx2Vector>(x, k), _mm256_castsi256_ps(exponent));
  }
  // 1 / (1 + e^-z): a 12-bit reciprocal and one Newton step (about 2 float ulp).
  static F sigmoid(F z) {
    const F d = _mm256_add_ps(_mm256_set1_ps(1.0f), exp(_mm256_sub_ps(_mm256_setzero_ps(), z)));
    const F r = _mm256_rcp_ps(d);
    return _mm256_mul_ps(r, _mm256_fnmadd_ps(d, r, _mm256_set1_ps(2.0f)));
  }
  static void add_to_double(F v, double* dst, int n) {
    if (n >= 8) {
      _mm256_storeu_pd(
          dst, _mm256_add_pd(_mm256_loadu_pd(dst), _mm256_cvtps_pd(_mm256_castps256_ps128(v))));
      _mm256_storeu_pd(dst + 4, _mm256_add_pd(_mm256_loadu_pd(dst + 4),
                                              _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1))));
      return;
    }
    alignas(32) float lanes_out[8];
    _mm256_store_ps(lanes_out, v);
    for (int i = 0; i < n; ++i) dst[i] += lanes_out[i];
  }
  static double sum(F v) {
    const __m256d both = _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)),
                                       _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    const __m128d pair = _mm_add_pd(_mm256_castpd256_pd128(both), _mm256_extractf128_pd(both, 1));
    return _mm_cvtsd_f64(_mm_add_sd(pair, _mm_unpackhi_pd(pair, pair)));
  }
};

constexpr Kernels kAvx2 = Erased<Avx2Vector>::table("avx2");

}  // namespace
}  // namespace detrain::model::bn_silu
#pragma GCC pop_options

namespace detrain::model::bn_silu {
const Kernels* avx2_kernels() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? &kAvx2 : nullptr;
}
}  // namespace detrain::model::bn_silu

#else
namespace detrain::model::bn_silu {
const Kernels* avx2_kernels() { return nullptr; }
}  // namespace detrain::model::bn_silu
#endif
