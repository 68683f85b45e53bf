// The fused BatchNorm + SiLU kernels with AVX-512 (F, BW, VL, DQ), 16 floats a step; see
// bn_silu_loops.h for the loops. bf16 data is widened to float in registers and rounded back to
// nearest even (as c10::BFloat16), so the CPU needs no AVX512-BF16. The loops are compiled under a
// target pragma after every standard header is in, and live in an unnamed namespace: nothing this
// file compiles for AVX-512 can stand in for another file's inline code.
#include <cstdint>

#include "model/bn_silu_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wuninitialized reports
// wherever they inline (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#pragma GCC push_options
// avx512bf16 for Avx512Bf16Vector's one conversion: the compiler emits no BF16 instruction of
// its own from this file's integer code, so Avx512Vector runs on CPUs without it.
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,fma,avx512bf16")
#include "model/bn_silu_loops.h"

namespace detrain::model::bn_silu {
namespace {

struct Avx512Vector {
  using F = __m512;
  static constexpr int kWidth = 16;
  static __mmask16 lanes(int n) {
    return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1u);
  }
  static F zero() { return _mm512_setzero_ps(); }
  static F set1(float v) { return _mm512_set1_ps(v); }
  static F load(const float* p, int n) {
    return n >= 16 ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(lanes(n), p);
  }
  static F load(const uint16_t* p, int n) {
    const __m256i half = n >= 16 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))
                                 : _mm256_maskz_loadu_epi16(lanes(n), p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(half), 16));
  }
  static void store(float* p, F v, int n) {
    if (n >= 16)
      _mm512_storeu_ps(p, v);
    else
      _mm512_mask_storeu_ps(p, lanes(n), v);
  }
  // Round to nearest even; NaN lanes become the quiet NaN 0x7fc0.
  static void store(uint16_t* p, F v, int n) {
    const __m512i bits = _mm512_castps_si512(v);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
    __m512i rounded = _mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7fff)), odd);
    rounded = _mm512_srli_epi32(rounded, 16);
    rounded = _mm512_mask_mov_epi32(rounded, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q),
                                    _mm512_set1_epi32(0x7fc0));
    const __m256i half = _mm512_cvtepi32_epi16(rounded);
    if (n >= 16)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), half);
    else
      _mm256_mask_storeu_epi16(p, lanes(n), half);
  }
  static F keep(F v, int n) { return n >= 16 ? v : _mm512_maskz_mov_ps(lanes(n), v); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  // e^x (bn_silu_loops.h's exp_reduced), scaled by 2^k with scalef (0 below float's range); x
  // is clamped to [-100, 88], so that k stays exact and the result finite (sigmoid's
  // reciprocal needs a finite 1 + e^-z).
  static F exp(F x) {
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-100.0f)), _mm512_set1_ps(88.0f));
    const F k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm512_scalef_ps(exp_reduced<Avx512Vector>(x, k), k);
  }
  // 1 / (1 + e^-z) by a 14-bit reciprocal and one Newton step (within about 2 float ulp): a
  // full-width division costs several times as much on AVX-512 cores.
  static F sigmoid(F z) {
    const F d = _mm512_add_ps(_mm512_set1_ps(1.0f), exp(_mm512_sub_ps(_mm512_setzero_ps(), z)));
    const F r = _mm512_rcp14_ps(d);
    return _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.0f)));
  }
  static void add_to_double(F v, double* dst, int n) {
    const __m512d low = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    const __m512d high =
        _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    const __mmask8 low_lanes = n >= 8 ? 0xff : static_cast<__mmask8>((1u << n) - 1u);
    const __mmask8 high_lanes = n >= 16 ? 0xff
                                : n > 8 ? static_cast<__mmask8>((1u << (n - 8)) - 1u)
                                        : 0;
    _mm512_mask_storeu_pd(dst, low_lanes,
                          _mm512_add_pd(_mm512_maskz_loadu_pd(low_lanes, dst), low));
    _mm512_mask_storeu_pd(dst + 8, high_lanes,
                          _mm512_add_pd(_mm512_maskz_loadu_pd(high_lanes, dst + 8), high));
  }
  static double sum(F v) {
    const __m512d low = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    const __m512d high =
        _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    return _mm512_reduce_add_pd(_mm512_add_pd(low, high));
  }
};

// CPUs with AVX512-BF16 round float to bf16 (to nearest even, NaN quiet) in one instruction.
struct Avx512Bf16Vector : Avx512Vector {
  using Avx512Vector::store;
  static void store(uint16_t* p, F v, int n) {
    const __m256i half = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v));
    if (n >= 16)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), half);
    else
      _mm256_mask_storeu_epi16(p, lanes(n), half);
  }
};

constexpr Kernels kAvx512 = Erased<Avx512Vector>::table("avx512");
constexpr Kernels kAvx512Bf16 = Erased<Avx512Bf16Vector>::table("avx512-bf16");

}  // namespace
}  // namespace detrain::model::bn_silu
#pragma GCC pop_options

namespace detrain::model::bn_silu {
const Kernels* avx512_kernels() {
  const bool supported = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (!supported) return nullptr;
  return __builtin_cpu_supports("avx512bf16") ? &kAvx512Bf16 : &kAvx512;
}
const Kernels* avx512_kernels_without_bf16() { return avx512_kernels() ? &kAvx512 : nullptr; }
}  // namespace detrain::model::bn_silu

#else
namespace detrain::model::bn_silu {
const Kernels* avx512_kernels() { return nullptr; }
const Kernels* avx512_kernels_without_bf16() { return nullptr; }
}  // namespace detrain::model::bn_silu
#endif
