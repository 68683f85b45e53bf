// The loops of the fused BatchNorm + SiLU kernels (bn_silu_kernels.h), written once over a vector
// type V and instantiated per instruction set by bn_silu_scalar.cpp and bn_silu_avx512.cpp (the
// latter under a target pragma, so everything here stays in an unnamed namespace and uses no
// std:: template: no inline code this file makes is shared with code built for another ISA).
//
// V provides: F (a register of kWidth floats), zero(), set1(), load(p, n) / store(p, v, n) of
// the first n lanes from float or bf16 (uint16_t) memory (other lanes load as 0), keep(v, n)
// (zeroes lanes n and up), add, sub, mul, fmadd(a, b, c) = a * b + c, sigmoid, and
// add_to_double(v, dst, n) / sum(v) (double precision).
//
// Sums accumulate in float registers over a short run (kRowsPerFlush rows, kVectorsPerFlush
// vectors) and then in double, so a channel of 400k pixels keeps float's precision per run.
#pragma once

#include <cstdint>

#include "model/bn_silu_kernels.h"

namespace detrain::model::bn_silu {
namespace {

constexpr int kChannelBlock = 8;          // vector registers per channel block (NHWC sums)
constexpr int64_t kRowsPerFlush = 32;     // NHWC: rows summed in float before the double add
constexpr int64_t kVectorsPerFlush = 64;  // NCHW: vectors summed in float before the double add

inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// Per-channel parameters as a register: NHWC loads the lanes' channels, NCHW broadcasts the
// plane's one channel.
template <class V>
struct RowParams {
  int64_t c;
  int n;
  typename V::F operator()(const float* values) const { return V::load(values + c, n); }
};
template <class V>
struct PlaneParams {
  int64_t c;
  typename V::F operator()(const float* values) const { return V::set1(values[c]); }
};

// Reductions: term(offset, n, params, t) writes kOut contributions for the n lanes at `offset`.
template <class V, int kOut, class Term>
void reduce_rows(const Layout& layout, int64_t begin, int64_t end, const Term& term,
                 double* const* out) {
  using F = typename V::F;
  constexpr int W = V::kWidth;
  const int64_t channels = layout.channels;
  for (int64_t c0 = 0; c0 < channels; c0 += int64_t{W} * kChannelBlock) {
    for (int64_t r0 = begin; r0 < end; r0 += kRowsPerFlush) {
      const int64_t r1 = min64(end, r0 + kRowsPerFlush);
      F acc[kOut][kChannelBlock];
      for (int k = 0; k < kOut; ++k)
        for (int v = 0; v < kChannelBlock; ++v) acc[k][v] = V::zero();
      for (int64_t r = r0; r < r1; ++r) {
        for (int v = 0; v < kChannelBlock; ++v) {
          const int64_t c = c0 + int64_t{v} * W;
          if (c >= channels) break;
          const int n = static_cast<int>(min64(W, channels - c));
          F t[kOut];
          term(r * channels + c, n, RowParams<V>{c, n}, t);
          for (int k = 0; k < kOut; ++k) acc[k][v] = V::add(acc[k][v], V::keep(t[k], n));
        }
      }
      for (int v = 0; v < kChannelBlock; ++v) {
        const int64_t c = c0 + int64_t{v} * W;
        if (c >= channels) break;
        const int n = static_cast<int>(min64(W, channels - c));
        for (int k = 0; k < kOut; ++k) V::add_to_double(acc[k][v], out[k] + c, n);
      }
    }
  }
}

template <class V, int kOut, class Term>
void reduce_planes(const Layout& layout, int64_t begin, int64_t end, const Term& term,
                   double* const* out) {
  using F = typename V::F;
  constexpr int W = V::kWidth;
  const int64_t size = layout.spatial;
  for (int64_t p = begin; p < end; ++p) {
    const int64_t c = p % layout.channels;
    const PlaneParams<V> params{c};
    double total[kOut] = {};
    for (int64_t s0 = 0; s0 < size; s0 += int64_t{W} * kVectorsPerFlush) {
      const int64_t s1 = min64(size, s0 + int64_t{W} * kVectorsPerFlush);
      F acc[kOut];
      for (int k = 0; k < kOut; ++k) acc[k] = V::zero();
      for (int64_t s = s0; s < s1; s += W) {
        const int n = static_cast<int>(min64(W, s1 - s));
        F t[kOut];
        term(p * size + s, n, params, t);
        for (int k = 0; k < kOut; ++k) acc[k] = V::add(acc[k], V::keep(t[k], n));
      }
      for (int k = 0; k < kOut; ++k) total[k] += V::sum(acc[k]);
    }
    for (int k = 0; k < kOut; ++k) out[k][c] += total[k];
  }
}

template <class V, int kOut, class Term>
void reduce(const Layout& layout, int64_t begin, int64_t end, const Term& term,
            double* const* out) {
  if (layout.nhwc)
    reduce_rows<V, kOut>(layout, begin, end, term, out);
  else
    reduce_planes<V, kOut>(layout, begin, end, term, out);
}

// Element-wise passes: body(offset, n, params) for every vector of the units.
template <class V, class Body>
void for_each_vector(const Layout& layout, int64_t begin, int64_t end, const Body& body) {
  constexpr int W = V::kWidth;
  if (layout.nhwc) {
    const int64_t channels = layout.channels;
    for (int64_t r = begin; r < end; ++r)
      for (int64_t c = 0; c < channels; c += W) {
        const int n = static_cast<int>(min64(W, channels - c));
        body(r * channels + c, n, RowParams<V>{c, n});
      }
  } else {
    const int64_t size = layout.spatial;
    for (int64_t p = begin; p < end; ++p) {
      const PlaneParams<V> params{p % layout.channels};
      for (int64_t s = 0; s < size; s += W)
        body(p * size + s, static_cast<int>(min64(W, size - s)), params);
    }
  }
}

// e^x for the vector builds, Cephes' expf: x = k ln 2 + r with |r| <= ln 2 / 2 (ln 2 in two
// parts, so that k ln 2 is exact), e^r = 1 + r + r^2 p(r); the caller scales by 2^k. Within
// 2 ulp of expf.
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2High = 0.693359375f, kLn2Low = -2.12194440e-4f;
constexpr float kExpPolynomial[] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                    4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

// e^r for the reduced argument r = x - k ln 2, given x and the integer-valued k.
template <class V>
typename V::F exp_reduced(typename V::F x, typename V::F k) {
  using F = typename V::F;
  F r = V::fmadd(k, V::set1(-kLn2High), x);
  r = V::fmadd(k, V::set1(-kLn2Low), r);
  F p = V::set1(kExpPolynomial[0]);
  for (int i = 1; i < 6; ++i) p = V::fmadd(p, r, V::set1(kExpPolynomial[i]));
  return V::add(V::fmadd(p, V::mul(r, r), r), V::set1(1.0f));
}

// dy * s * (1 + z (1 - s)), s = sigmoid(z): SiLU's derivative at z times dy.
template <class V>
typename V::F silu_gradient(typename V::F dy, typename V::F z) {
  const auto one = V::set1(1.0f);
  const auto s = V::sigmoid(z);
  return V::mul(V::mul(dy, s), V::fmadd(z, V::sub(one, s), one));
}

template <class V, class T>
struct Typed {
  using F = typename V::F;

  static void shifted_sums(const T* x, const Layout& layout, const float* origin, int64_t begin,
                           int64_t end, double* sum, double* sum_sq) {
    double* outs[2] = {sum, sum_sq};
    reduce<V, 2>(
        layout, begin, end,
        [x, origin](int64_t o, int n, const auto& params, F* t) {
          t[0] = V::sub(V::load(x + o, n), params(origin));
          t[1] = V::mul(t[0], t[0]);
        },
        outs);
  }

  static void forward(const T* x, T* y, const Layout& layout, const float* scale,
                      const float* shift, int64_t begin, int64_t end) {
    for_each_vector<V>(layout, begin, end, [=](int64_t o, int n, const auto& params) {
      const F z = V::fmadd(V::load(x + o, n), params(scale), params(shift));
      V::store(y + o, V::mul(z, V::sigmoid(z)), n);
    });
  }

  static void backward_sums(const T* x, const T* dy, T* dz, const Layout& layout,
                            const float* scale, const float* shift, const float* mean,
                            int64_t begin, int64_t end, double* sum_dz, double* sum_dz_centered) {
    double* outs[2] = {sum_dz, sum_dz_centered};
    reduce<V, 2>(
        layout, begin, end,
        [=](int64_t o, int n, const auto& params, F* t) {
          const F xv = V::load(x + o, n);
          const F z = V::fmadd(xv, params(scale), params(shift));
          t[0] = silu_gradient<V>(V::load(dy + o, n), z);
          V::store(dz + o, t[0], n);
          t[1] = V::mul(t[0], V::sub(xv, params(mean)));
        },
        outs);
  }

  // dz and dx may be one buffer: each vector is read before it is written.
  static void backward_apply(const T* x, const T* dz, T* dx, const Layout& layout,
                             const float* scale, const float* a, const float* b, int64_t begin,
                             int64_t end) {
    for_each_vector<V>(layout, begin, end, [=](int64_t o, int n, const auto& params) {
      const F xv = V::load(x + o, n);
      V::store(dx + o,
               V::fmadd(V::load(dz + o, n), params(scale), V::fmadd(xv, params(a), params(b))), n);
    });
  }
};

// The type-erased entry points of Kernels: float or bf16 (stored as uint16_t).
template <class V>
struct Erased {
  template <class T>
  using K = Typed<V, T>;

  static void shifted_sums(const void* x, Dtype d, const Layout& l, const float* origin, int64_t b,
                           int64_t e, double* sum, double* sum_sq) {
    if (d == Dtype::kBf16)
      K<uint16_t>::shifted_sums(static_cast<const uint16_t*>(x), l, origin, b, e, sum, sum_sq);
    else
      K<float>::shifted_sums(static_cast<const float*>(x), l, origin, b, e, sum, sum_sq);
  }
  static void forward(const void* x, void* y, Dtype d, const Layout& l, const float* scale,
                      const float* shift, int64_t b, int64_t e) {
    if (d == Dtype::kBf16)
      K<uint16_t>::forward(static_cast<const uint16_t*>(x), static_cast<uint16_t*>(y), l, scale,
                           shift, b, e);
    else
      K<float>::forward(static_cast<const float*>(x), static_cast<float*>(y), l, scale, shift, b,
                        e);
  }
  static void backward_sums(const void* x, const void* dy, void* dz, Dtype d, const Layout& l,
                            const float* scale, const float* shift, const float* mean, int64_t b,
                            int64_t e, double* sum_dz, double* sum_dz_centered) {
    if (d == Dtype::kBf16)
      K<uint16_t>::backward_sums(static_cast<const uint16_t*>(x), static_cast<const uint16_t*>(dy),
                                 static_cast<uint16_t*>(dz), l, scale, shift, mean, b, e, sum_dz,
                                 sum_dz_centered);
    else
      K<float>::backward_sums(static_cast<const float*>(x), static_cast<const float*>(dy),
                              static_cast<float*>(dz), l, scale, shift, mean, b, e, sum_dz,
                              sum_dz_centered);
  }
  static void backward_apply(const void* x, const void* dz, void* dx, Dtype d, const Layout& l,
                             const float* scale, const float* a, const float* bb, int64_t b,
                             int64_t e) {
    if (d == Dtype::kBf16)
      K<uint16_t>::backward_apply(static_cast<const uint16_t*>(x), static_cast<const uint16_t*>(dz),
                                  static_cast<uint16_t*>(dx), l, scale, a, bb, b, e);
    else
      K<float>::backward_apply(static_cast<const float*>(x), static_cast<const float*>(dz),
                               static_cast<float*>(dx), l, scale, a, bb, b, e);
  }

  static constexpr Kernels table(const char* name) {
    return Kernels{name, &shifted_sums, &forward, &backward_sums, &backward_apply};
  }
};

}  // namespace
}  // namespace detrain::model::bn_silu
