// The fused BatchNorm + SiLU kernels in portable C++, one float at a time: any CPU, and the
// cross-check of the AVX-512 build in tests (see bn_silu_loops.h for the loops).
#include <cmath>
#include <cstdint>
#include <cstring>

#include "model/bn_silu_kernels.h"
#include "model/bn_silu_loops.h"

namespace detrain::model::bn_silu {
namespace {

struct ScalarVector {
  using F = float;
  static constexpr int kWidth = 1;
  static F zero() { return 0.0f; }
  static F set1(float v) { return v; }
  static F load(const float* p, int) { return *p; }
  static F load(const uint16_t* p, int) {
    const uint32_t bits = uint32_t{*p} << 16;
    float v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  static void store(float* p, F v, int) { *p = v; }
  // Round to nearest even, as c10::BFloat16 does; NaN stays a quiet NaN.
  static void store(uint16_t* p, F v, int) {
    if (std::isnan(v)) {
      *p = 0x7fc0;
      return;
    }
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    *p = static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
  }
  static F keep(F v, int) { return v; }
  static F add(F a, F b) { return a + b; }
  static F sub(F a, F b) { return a - b; }
  static F mul(F a, F b) { return a * b; }
  static F fmadd(F a, F b, F c) { return a * b + c; }
  static F sigmoid(F z) { return 1.0f / (1.0f + std::exp(-z)); }
  static void add_to_double(F v, double* dst, int) { *dst += v; }
  static double sum(F v) { return v; }
};

constexpr Kernels kScalar = Erased<ScalarVector>::table("scalar");

}  // namespace

const Kernels& scalar_kernels() { return kScalar; }

}  // namespace detrain::model::bn_silu
