// Newton-Schulz CPU kernel; see ns_workspace.h. Gemms go through at::mm_out on views of the
// buffers (the same BLAS call as the ATen formula, so the fp32 products are the same bits).
#include "optim/ns_workspace.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "optim/newton_schulz.h"

namespace detrain::optim {

namespace {

// fp32 -> nearest-even bf16, kept in fp32 storage (c10::BFloat16's rounding; a NaN becomes the
// quiet NaN 0x7FC0). Branch-free so that the passes below vectorise.
inline float round_bf16(float f) {
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  const uint32_t nan = 0u - static_cast<uint32_t>(f != f);  // all ones for a NaN
  bits = (((bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u) & ~nan) | (0x7FC00000u & nan);
  float out = 0;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

struct Identity {
  float operator()(float f) const { return f; }
};
struct RoundBf16 {
  float operator()(float f) const { return round_bf16(f); }
};

// Calls f(i) for i in [0, n) in fixed blocks: GCC's -O2 cost model vectorises a loop only
// when its trip count needs no epilogue, which the constant inner count gives it.
template <class F>
void for_each_index(int64_t n, F f) {
  constexpr int64_t kBlock = 16;
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock)
    for (int64_t j = 0; j < kBlock; ++j) f(i + j);
  for (; i < n; ++i) f(i);
}

// One step's elementwise work in the reference's order (ATen's bf16 binary ops compute in fp32
// and round once, so each of them is R(op) here). `n_square` = r * r, `n_wide` = r * c.
// After A = X X^T:       A <- R(A), T <- R(c A)
// After M = T A (in b):  B <- R(R(b A) + R(M))
// After Y = B X:         X <- R(R(a X) + R(Y))
template <class R>
void round_product(float* __restrict a, float* __restrict t, int64_t n_square, float c, R round) {
  for_each_index(n_square, [=](int64_t i) {
    const float av = round(a[i]);
    a[i] = av;
    t[i] = round(c * av);
  });
}

template <class R>
void combine(float* __restrict out, const float* __restrict scaled, int64_t n, float coef,
             R round) {
  for_each_index(n, [=](int64_t i) { out[i] = round(round(coef * scaled[i]) + round(out[i])); });
}

template <class R>
void update_x(float* __restrict x, const float* __restrict y, int64_t n, float a, R round) {
  for_each_index(n, [=](int64_t i) { x[i] = round(round(a * x[i]) + round(y[i])); });
}

template <class R>
void run_steps(const at::Tensor& x, const at::Tensor& xt, at::Tensor y, at::Tensor a,
               const at::Tensor& t, at::Tensor b, const NsCoefficients& k, R round) {
  const int64_t n_square = a.numel(), n_wide = x.numel();
  float *xp = x.data_ptr<float>(), *yp = y.data_ptr<float>();
  float *ap = a.data_ptr<float>(), *tp = t.data_ptr<float>(), *bp = b.data_ptr<float>();
  for (int step = 0; step < kNsSteps; ++step) {
    at::mm_out(a, x, xt);  // A = X X^T
    round_product(ap, tp, n_square, k.c, round);
    at::mm_out(b, t, a);  // (c A) A
    combine(bp, ap, n_square, k.b, round);
    at::mm_out(y, b, x);  // B X
    update_x(xp, yp, n_wide, k.a, round);
  }
}

}  // namespace

NsCoefficients ns_coefficients(at::ScalarType compute) {
  TORCH_CHECK(compute == at::kFloat || compute == at::kBFloat16,
              "Newton-Schulz computes in fp32 or bf16, got ", compute);
  const auto as_dtype = [&](double v) {
    const auto f = static_cast<float>(v);
    return compute == at::kBFloat16 ? static_cast<float>(c10::BFloat16(f)) : f;
  };
  return {as_dtype(kNsA), as_dtype(kNsB), as_dtype(kNsC), compute == at::kBFloat16};
}

NsWorkspace::NsWorkspace(int64_t count, int64_t rows, int64_t cols)
    : count_(count), rows_(rows), cols_(cols) {
  TORCH_CHECK(count > 0 && rows > 0 && rows <= cols, "NsWorkspace takes wide stacks, got [", count,
              ", ", rows, ", ", cols, "]");
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  x_ = at::zeros({count, rows, cols}, f32);
  y_ = at::empty({count, rows, cols}, f32);
  a_ = at::empty({count, rows, rows}, f32);
  t_ = at::empty({count, rows, rows}, f32);
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
  const auto t = view(t_, {rows_, rows_}, {rows_, 1});                           // [r, r]
  const auto b = view(b_, {rows_, rows_}, {rows_, 1});                           // [r, r]
  if (k.round_bf16)
    run_steps(x, xt, y, a, t, b, k, RoundBf16{});
  else
    run_steps(x, xt, y, a, t, b, k, Identity{});
}

void iterate_all(const std::vector<NsWorkspace*>& workspaces, const NsCoefficients& k) {
  struct Item {
    NsWorkspace* ws;
    int64_t slice;
    double cost;
  };
  // A slice's cost: its arithmetic plus its 15 gemm calls' fixed overhead (~5 us each at the
  // ~60 GFLOP/s a core reaches, i.e. ~3e5 flop a call).
  constexpr double kCallCost = 3e5;
  std::vector<Item> items;
  for (auto* ws : workspaces)
    for (int64_t s = 0; s < ws->count(); ++s)
      items.push_back({ws, s, ws->slice_flop() + 3 * kNsSteps * kCallCost});
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& l, const Item& r) { return l.cost > r.cost; });
  const int threads = at::in_parallel_region() ? 1 : std::max(1, at::get_num_threads());
  std::vector<std::vector<Item>> lanes(static_cast<size_t>(threads));
  std::vector<double> load(lanes.size(), 0.0);
  for (const auto& item : items) {
    const auto lane = std::min_element(load.begin(), load.end()) - load.begin();
    lanes[lane].push_back(item);
    load[lane] += item.cost;
  }
  // Grain 1 over `threads` lanes: each intra-op thread takes exactly one lane.
  at::parallel_for(0, threads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t lane = begin; lane < end; ++lane)
      for (const auto& item : lanes[lane]) item.ws->iterate(item.slice, k);
  });
}

}  // namespace detrain::optim
