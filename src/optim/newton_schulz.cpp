// Newton-Schulz; see newton_schulz.h. Operation order mirrors the reference so that each
// intermediate rounds where the Python code rounds ("c * A @ A" parses as (c * A) @ A).
#include "optim/newton_schulz.h"

namespace detrain::optim {

namespace {

// Five quintic steps on X [..., r, c] with r <= c (wide); batched when X has a leading dim.
torch::Tensor iterate(torch::Tensor x) {
  for (int step = 0; step < kNsSteps; ++step) {
    const auto a = x.matmul(x.transpose(-2, -1));  // [..., r, r]
    const auto b = kNsB * a + (kNsC * a).matmul(a);
    x = kNsA * x + b.matmul(x);
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
