// Newton-Schulz; see newton_schulz.h. Normalisation and orientation are ATen ops in the
// reference's dtype; the five steps run in ns_workspace's kernel on the CPU and as the
// reference's own ops elsewhere (Ultralytics 8.4.190: one baddbmm per line, B = b A + c A A and
// X = a X + B X, each rounding once).
#include "optim/newton_schulz.h"

#include "optim/ns_workspace.h"

namespace detrain::optim {

namespace {

// The five steps as the reference's ATen ops on X [..., r, c] with r <= c, for devices with
// native bf16 matmuls (CUDA).
torch::Tensor iterate_aten(torch::Tensor x) {
  const bool stack = x.dim() == 3;
  const auto fused = [&](const torch::Tensor& self, const torch::Tensor& l, const torch::Tensor& r,
                         double beta, double alpha) {
    return stack ? torch::baddbmm(self, l, r, beta, alpha) : torch::addmm(self, l, r, beta, alpha);
  };
  for (int step = 0; step < kNsSteps; ++step) {
    const auto a = stack ? x.bmm(x.transpose(-2, -1)) : x.mm(x.t());  // [..., r, r]
    const auto b = fused(a, a, a, kNsB, kNsC);                        // b A + c A A
    x = fused(x, b, x, kNsA, 1.0);                                    // a X + B X
  }
  return x;
}

// Workspace result [k, r, c] (fp32 holding compute-dtype values) in the compute dtype.
torch::Tensor result_of(const NsWorkspace& ws, torch::ScalarType compute) {
  return compute == torch::kFloat ? ws.x() : ws.x().to(compute);
}

}  // namespace

torch::Tensor newton_schulz(const torch::Tensor& matrix, torch::ScalarType compute) {
  TORCH_CHECK(matrix.dim() == 2, "newton_schulz takes a matrix, got shape ", matrix.sizes());
  const auto coefficients = ns_coefficients(compute);
  auto x = matrix.to(compute);
  // Out of place: when `matrix` already has the compute dtype, .to() returns it unchanged.
  x = x / (x.norm() + kNsEps);
  const bool tall = matrix.size(0) > matrix.size(1);
  if (tall) x = x.t();
  if (!x.device().is_cpu()) {
    x = iterate_aten(x);
  } else {
    NsWorkspace ws(1, x.size(0), x.size(1));
    ws.x()[0].copy_(x);
    ws.iterate(0, coefficients);  // not in a parallel region: BLAS threads each gemm
    x = result_of(ws, compute)[0];
  }
  return tall ? x.t() : x;
}

torch::Tensor newton_schulz_batched(const torch::Tensor& stack, torch::ScalarType compute) {
  TORCH_CHECK(stack.dim() == 3, "newton_schulz_batched takes [k, r, c], got ", stack.sizes());
  return NewtonSchulzPlan({stack.sizes().vec()}, compute).run({stack})[0];
}

NewtonSchulzPlan::NewtonSchulzPlan(std::vector<std::vector<int64_t>> shapes,
                                   torch::ScalarType compute)
    : shapes_(std::move(shapes)), compute_(compute) {
  ns_coefficients(compute);  // refuses other dtypes now rather than at the first step
  for (const auto& s : shapes_)
    TORCH_CHECK(s.size() == 3 && s[0] > 0, "NewtonSchulzPlan takes [k, r, c] stacks, got ", s);
  workspaces_.resize(shapes_.size());
}

NewtonSchulzPlan::~NewtonSchulzPlan() = default;
NewtonSchulzPlan::NewtonSchulzPlan(NewtonSchulzPlan&&) noexcept = default;
NewtonSchulzPlan& NewtonSchulzPlan::operator=(NewtonSchulzPlan&&) noexcept = default;

std::vector<torch::Tensor> NewtonSchulzPlan::run(const std::vector<torch::Tensor>& stacks) {
  TORCH_CHECK(stacks.size() == shapes_.size(), "NewtonSchulzPlan built for ", shapes_.size(),
              " stacks, run with ", stacks.size());
  std::vector<torch::Tensor> results(stacks.size());
  std::vector<NsWorkspace*> on_cpu;
  std::vector<bool> tall(stacks.size(), false);
  for (size_t i = 0; i < stacks.size(); ++i) {
    if (!stacks[i].defined()) continue;
    TORCH_CHECK(stacks[i].sizes() == torch::IntArrayRef(shapes_[i]), "NewtonSchulzPlan stack ", i,
                " has shape ", stacks[i].sizes(), ", built for ", shapes_[i]);
    auto x = stacks[i].to(compute_);
    // One matrix: the direct call's whole-tensor norm, so that it matches newton_schulz bit for
    // bit (the per-matrix reduction may sum in another order).
    const auto norm = x.size(0) == 1 ? x.norm() : x.norm(2, {-2, -1}, /*keepdim=*/true);
    x = x / (norm + kNsEps);
    tall[i] = x.size(1) > x.size(2);
    if (tall[i]) x = x.transpose(-2, -1);
    if (!x.device().is_cpu()) {
      results[i] = iterate_aten(x);
      continue;
    }
    auto& ws = workspaces_[i];
    if (!ws) ws = std::make_unique<NsWorkspace>(x.size(0), x.size(1), x.size(2));
    ws->x().copy_(x);
    on_cpu.push_back(ws.get());
  }
  iterate_all(on_cpu, ns_coefficients(compute_));
  for (size_t i = 0; i < stacks.size(); ++i) {
    if (!stacks[i].defined()) continue;
    if (!results[i].defined()) results[i] = result_of(*workspaces_[i], compute_);
    if (tall[i]) results[i] = results[i].transpose(-2, -1);
  }
  return results;
}

}  // namespace detrain::optim
