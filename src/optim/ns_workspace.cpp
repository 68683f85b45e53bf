// Newton-Schulz CPU kernel; see ns_workspace.h. Gemms go through at::mm_out on views of the
// buffers (the same BLAS call as the ATen formula, so the fp32 products are the same bits).
#include "optim/ns_workspace.h"

#include <ATen/ATen.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <cstdint>
#include <cstring>

#include "optim/newton_schulz.h"
#include "optim/ns_schedule.h"

namespace detrain::optim {

namespace {

// fp32 -> nearest-even bf16, kept in fp32 storage (c10::BFloat16's rounding; a NaN becomes the
// quiet NaN 0x7FC0).
inline float round_bf16(float f) {
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  bits = f != f ? 0x7FC00000u : (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
  float out = 0;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

// Lanes of 1 float: the portable fallback, and fp32 mode (no rounding).
template <bool kRound>
struct ScalarLanes {
  using V = float;
  static constexpr int64_t kWidth = 1;
  static V load(const float* p) { return *p; }
  static void store(float* p, V v) { *p = v; }
  static V set(float f) { return f; }
  static V mul(V a, V b) { return a * b; }
  static V add(V a, V b) { return a + b; }
  static V round(V v) { return kRound ? round_bf16(v) : v; }
};

#if defined(__SSE2__)
// 4 lanes with SSE2 (every x86-64): GCC's -O2 does not vectorise the scalar rounding, which
// made the bf16 passes cost as much as the gemms. Same arithmetic and rounding as the scalar.
template <bool kRound>
struct SseLanes {
  using V = __m128;
  static constexpr int64_t kWidth = 4;
  static V load(const float* p) { return _mm_loadu_ps(p); }
  static void store(float* p, V v) { _mm_storeu_ps(p, v); }
  static V set(float f) { return _mm_set1_ps(f); }
  static V mul(V a, V b) { return _mm_mul_ps(a, b); }
  static V add(V a, V b) { return _mm_add_ps(a, b); }
  static V round(V v) {
    if (!kRound) return v;
    const __m128i bits = _mm_castps_si128(v);
    const __m128i lsb = _mm_and_si128(_mm_srli_epi32(bits, 16), _mm_set1_epi32(1));
    __m128i r = _mm_add_epi32(_mm_add_epi32(bits, _mm_set1_epi32(0x7FFF)), lsb);
    r = _mm_and_si128(r, _mm_set1_epi32(static_cast<int>(0xFFFF0000u)));
    const __m128i number = _mm_castps_si128(_mm_cmpord_ps(v, v));  // all ones unless NaN
    r = _mm_or_si128(_mm_and_si128(number, r),
                     _mm_andnot_si128(number, _mm_set1_epi32(0x7FC00000)));
    return _mm_castsi128_ps(r);
  }
};
template <bool kRound>
using Lanes = SseLanes<kRound>;
#else
template <bool kRound>
using Lanes = ScalarLanes<kRound>;
#endif

// f(lanes, i) over [0, n) in steps of L::kWidth, the tail with scalar lanes of the same mode.
template <class L, class Tail, class F>
void for_lanes(int64_t n, F f) {
  int64_t i = 0;
  for (; i + L::kWidth <= n; i += L::kWidth) f(L{}, i);
  for (; i < n; ++i) f(Tail{}, i);
}

// One step's elementwise work in Ultralytics 8.4.190's order: A = X X^T rounds once; each
// baddbmm line computes its products in fp32 and rounds once (fp32 coefficients; torch 2.x keeps
// a Python scalar in fp32 for bf16 tensors). `n_square` = r * r, `n_wide` = r * c.
// After A = X X^T:   A <- R(A)
// After M = A A:     B <- R(b A + c M)
// After Y = B X:     X <- R(a X + Y)
template <class L, class Tail>
void round_in_place(float* v, int64_t n) {
  for_lanes<L, Tail>(n, [&](auto l, int64_t i) {
    using W = decltype(l);
    W::store(v + i, W::round(W::load(v + i)));
  });
}

// out <- R(coef_self * self + coef_out * out), one rounding (the B and X lines).
template <class L, class Tail>
void combine(float* out, const float* self, int64_t n, float coef_self, float coef_out) {
  for_lanes<L, Tail>(n, [&](auto l, int64_t i) {
    using W = decltype(l);
    const auto scaled_self = W::mul(W::set(coef_self), W::load(self + i));
    const auto scaled_out =
        coef_out == 1.0f ? W::load(out + i) : W::mul(W::set(coef_out), W::load(out + i));
    W::store(out + i, W::round(W::add(scaled_self, scaled_out)));
  });
}

template <class L, class Tail>
void run_steps(const at::Tensor& x, const at::Tensor& xt, at::Tensor y, at::Tensor a, at::Tensor b,
               const NsCoefficients& k) {
  const int64_t n_square = a.numel(), n_wide = x.numel();
  float *xp = x.data_ptr<float>(), *yp = y.data_ptr<float>();
  float *ap = a.data_ptr<float>(), *bp = b.data_ptr<float>();
  for (int step = 0; step < kNsSteps; ++step) {
    at::mm_out(a, x, xt);  // A = X X^T
    round_in_place<L, Tail>(ap, n_square);
    at::mm_out(b, a, a);  // M = A A
    combine<L, Tail>(bp, ap, n_square, k.b, k.c);
    at::mm_out(y, b, x);  // Y = B X
    combine<L, Tail>(yp, xp, n_wide, k.a, 1.0f);
    std::memcpy(xp, yp, static_cast<size_t>(n_wide) * sizeof(float));
  }
}

}  // namespace

NsCoefficients ns_coefficients(at::ScalarType compute) {
  TORCH_CHECK(compute == at::kFloat || compute == at::kBFloat16,
              "Newton-Schulz computes in fp32 or bf16, got ", compute);
  // fp32 coefficients in both modes (8.4.190 on torch 2.x); bf16 mode rounds the results.
  return {static_cast<float>(kNsA), static_cast<float>(kNsB), static_cast<float>(kNsC),
          compute == at::kBFloat16};
}

NsWorkspace::NsWorkspace(int64_t count, int64_t rows, int64_t cols)
    : count_(count), rows_(rows), cols_(cols) {
  TORCH_CHECK(count > 0 && rows > 0 && rows <= cols, "NsWorkspace takes wide stacks, got [", count,
              ", ", rows, ", ", cols, "]");
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  x_ = at::zeros({count, rows, cols}, f32);
  y_ = at::empty({count, rows, cols}, f32);
  a_ = at::empty({count, rows, rows}, f32);
  b_ = at::empty({count, rows, rows}, f32);
}

double NsWorkspace::slice_flop() const {
  const auto r = static_cast<double>(rows_), c = static_cast<double>(cols_);
  return kNsSteps * (4 * r * r * c + 2 * r * r * r);
}

void NsWorkspace::iterate(int64_t slice, const NsCoefficients& k) {
  TORCH_CHECK(slice >= 0 && slice < count_, "slice ", slice, " of a stack of ", count_);
  // Views made with from_blob: no operator call (x_[slice] would be one per view).
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  const auto view = [&](const at::Tensor& t, at::IntArrayRef sizes, at::IntArrayRef strides) {
    return at::from_blob(static_cast<float*>(t.data_ptr()) + slice * sizes[0] * sizes[1], sizes,
                         strides, f32);
  };
  const auto x = view(x_, {rows_, cols_}, {cols_, 1});                           // [r, c]
  const auto xt = at::from_blob(x.data_ptr(), {cols_, rows_}, {1, cols_}, f32);  // [c, r] view
  const auto y = view(y_, {rows_, cols_}, {cols_, 1});                           // [r, c]
  const auto a = view(a_, {rows_, rows_}, {rows_, 1});                           // [r, r]
  const auto b = view(b_, {rows_, rows_}, {rows_, 1});                           // [r, r]
  if (k.round_bf16)
    run_steps<Lanes<true>, ScalarLanes<true>>(x, xt, y, a, b, k);
  else
    run_steps<Lanes<false>, ScalarLanes<false>>(x, xt, y, a, b, k);
}

void iterate_all(const std::vector<NsWorkspace*>& workspaces, const NsCoefficients& k) {
  struct Item {
    NsWorkspace* ws;
    int64_t slice;
  };
  // A slice's cost: its arithmetic plus its 15 gemm calls' fixed cost (~1 us per at::mm_out on
  // tiny matrices here, i.e. ~6e4 flop at the ~60 GFLOP/s a core reaches).
  constexpr double kCallCost = 6e4;
  std::vector<Item> items;
  std::vector<double> costs;
  for (auto* ws : workspaces) {
    for (int64_t s = 0; s < ws->count(); ++s) {
      items.push_back({ws, s});
      costs.push_back(ws->slice_flop() + 3 * kNsSteps * kCallCost);
    }
  }
  run_balanced(costs, [&](size_t i) { items[i].ws->iterate(items[i].slice, k); });
}

}  // namespace detrain::optim
