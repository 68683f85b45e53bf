// Newton-Schulz; see newton_schulz.h. Operation order mirrors the reference so that each
// intermediate rounds where the Python code rounds ("c * A @ A" parses as (c * A) @ A).
#include "optim/newton_schulz.h"

namespace detrain::optim {

namespace {

// Five quintic steps on X [..., r, c] with r <= c (wide); batched when X has a leading dim.
// bf16 on the CPU: each matmul runs in fp32 on the bf16 values and rounds once to bf16, which
// is how cuBLAS and LibTorch 2.x CPU accumulate. LibTorch 1.13's own CPU bf16 matmul (no
// AVX512 here) accumulates in bf16 and is ~30x slower than this on yolo26n.
torch::Tensor iterate(torch::Tensor x) {
  const bool emulate = x.scalar_type() == torch::kBFloat16 && x.device().is_cpu();
  const auto wide = [&](const torch::Tensor& t) { return emulate ? t.to(torch::kFloat) : t; };
  const auto round = [&](const torch::Tensor& t) { return emulate ? t.to(torch::kBFloat16) : t; };
  // mm / bmm directly: matmul adds expand and reshape calls around bmm for stacks.
  const auto mm = [&](const torch::Tensor& l, const torch::Tensor& r) {
    return l.dim() == 2 ? l.mm(r) : l.bmm(r);
  };
  for (int step = 0; step < kNsSteps; ++step) {
    const auto xw = wide(x);                             // [..., r, c]
    const auto a = round(mm(xw, xw.transpose(-2, -1)));  // [..., r, r]
    const auto b = kNsB * a + round(mm(wide(kNsC * a), wide(a)));
    x = kNsA * x + round(mm(wide(b), xw));
  }
  return x;
}

}  // namespace

torch::Tensor newton_schulz(const torch::Tensor& matrix, torch::ScalarType compute) {
  TORCH_CHECK(matrix.dim() == 2, "newton_schulz takes a matrix, got shape ", matrix.sizes());
  auto x = matrix.to(compute);
  // Out of place: when `matrix` already has the compute dtype, .to() returns it unchanged.
  x = x / (x.norm() + kNsEps);
  const bool tall = matrix.size(0) > matrix.size(1);
  if (tall) x = x.t();
  x = iterate(x);
  return tall ? x.t() : x;
}

torch::Tensor newton_schulz_batched(const torch::Tensor& stack, torch::ScalarType compute) {
  TORCH_CHECK(stack.dim() == 3, "newton_schulz_batched takes [k, r, c], got ", stack.sizes());
  auto x = stack.to(compute);
  x = x / (x.norm(2, {-2, -1}, /*keepdim=*/true) + kNsEps);
  const bool tall = stack.size(1) > stack.size(2);
  if (tall) x = x.transpose(-2, -1);
  x = iterate(x);
  return tall ? x.transpose(-2, -1) : x;
}

}  // namespace detrain::optim
