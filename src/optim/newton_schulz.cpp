// Newton-Schulz; see newton_schulz.h. Normalisation and orientation are ATen ops in the
// reference's dtype; the five steps run in one of the two kernels (ns_native: the reference's
// own ops, one baddbmm per line; ns_workspace: the same rounding points over fp32 gemms).
#include "optim/newton_schulz.h"

#include "compat/torch_compat.h"
#include "optim/ns_native.h"
#include "optim/ns_workspace.h"

namespace detrain::optim {

namespace {

// Workspace result [k, r, c] (fp32 holding compute-dtype values) in the compute dtype.
torch::Tensor result_of(const NsWorkspace& ws, torch::ScalarType compute) {
  return compute == torch::kFloat ? ws.x() : ws.x().to(compute);
}

}  // namespace

NsKernel cpu_ns_kernel(NsKernel kernel, torch::ScalarType compute) {
  if (kernel != NsKernel::kAuto) return kernel;
  return compute == torch::kBFloat16 && compat::cpu_has_native_bf16_gemm() ? NsKernel::kNative
                                                                           : NsKernel::kEmulated;
}

const char* ns_kernel_name(NsKernel kernel) {
  switch (kernel) {
    case NsKernel::kNative:
      return "native";
    case NsKernel::kEmulated:
      return "emulated";
    case NsKernel::kAuto:
      break;
  }
  return "auto";
}

torch::Tensor newton_schulz(const torch::Tensor& matrix, torch::ScalarType compute,
                            NsKernel kernel) {
  TORCH_CHECK(matrix.dim() == 2, "newton_schulz takes a matrix, got shape ", matrix.sizes());
  // A one-matrix plan: the whole-matrix norm, and outside any parallel region (one piece of
  // work), so that LibTorch's threads share each gemm of a large matrix.
  return NewtonSchulzPlan({{1, matrix.size(0), matrix.size(1)}}, compute, kernel)
      .run({matrix.unsqueeze(0)})[0][0];
}

torch::Tensor newton_schulz_batched(const torch::Tensor& stack, torch::ScalarType compute,
                                    NsKernel kernel) {
  TORCH_CHECK(stack.dim() == 3, "newton_schulz_batched takes [k, r, c], got ", stack.sizes());
  return NewtonSchulzPlan({stack.sizes().vec()}, compute, kernel).run({stack})[0];
}

NewtonSchulzPlan::NewtonSchulzPlan(std::vector<std::vector<int64_t>> shapes,
                                   torch::ScalarType compute, NsKernel kernel)
    : shapes_(std::move(shapes)), compute_(compute), cpu_kernel_(cpu_ns_kernel(kernel, compute)) {
  ns_coefficients(compute);  // refuses other dtypes now rather than at the first step
  for (const auto& s : shapes_)
    TORCH_CHECK(s.size() == 3 && s[0] > 0, "NewtonSchulzPlan takes [k, r, c] stacks, got ", s);
  workspaces_.resize(shapes_.size());
  native_.resize(shapes_.size());
}

NewtonSchulzPlan::~NewtonSchulzPlan() = default;
NewtonSchulzPlan::NewtonSchulzPlan(NewtonSchulzPlan&&) noexcept = default;
NewtonSchulzPlan& NewtonSchulzPlan::operator=(NewtonSchulzPlan&&) noexcept = default;

std::vector<torch::Tensor> NewtonSchulzPlan::run(const std::vector<torch::Tensor>& stacks) {
  TORCH_CHECK(stacks.size() == shapes_.size(), "NewtonSchulzPlan built for ", shapes_.size(),
              " stacks, run with ", stacks.size());
  std::vector<torch::Tensor> results(stacks.size());
  std::vector<NsWorkspace*> emulated;
  std::vector<NsNativeStack*> native;
  std::vector<bool> tall(stacks.size(), false);
  for (size_t i = 0; i < stacks.size(); ++i) {
    if (!stacks[i].defined()) continue;
    TORCH_CHECK(stacks[i].sizes() == torch::IntArrayRef(shapes_[i]), "NewtonSchulzPlan stack ", i,
                " has shape ", stacks[i].sizes(), ", built for ", shapes_[i]);
    auto x = stacks[i].to(compute_);
    // One matrix: the whole-tensor norm of the reference's 2-D call (the per-matrix reduction
    // may sum in another order).
    const auto norm = x.size(0) == 1 ? x.norm() : x.norm(2, {-2, -1}, /*keepdim=*/true);
    x = x / (norm + kNsEps);
    tall[i] = x.size(1) > x.size(2);
    if (tall[i]) x = x.transpose(-2, -1);
    if (x.device().is_cpu() && cpu_kernel_ == NsKernel::kEmulated) {
      auto& ws = workspaces_[i];
      if (!ws) ws = std::make_unique<NsWorkspace>(x.size(0), x.size(1), x.size(2));
      ws->x().copy_(x);
      emulated.push_back(ws.get());
    } else {
      auto& stack = native_[i];
      if (!stack || stack->x().device() != x.device())
        stack = std::make_unique<NsNativeStack>(x.size(0), x.size(1), x.size(2), x.options());
      stack->x().copy_(x);
      native.push_back(stack.get());
    }
  }
  iterate_all(emulated, ns_coefficients(compute_));
  iterate_native_all(native);
  for (size_t i = 0; i < stacks.size(); ++i) {
    if (!stacks[i].defined()) continue;
    const bool on_workspace = stacks[i].device().is_cpu() && cpu_kernel_ == NsKernel::kEmulated;
    results[i] = on_workspace ? result_of(*workspaces_[i], compute_) : native_[i]->x();
    if (tall[i]) results[i] = results[i].transpose(-2, -1);
  }
  return results;
}

}  // namespace detrain::optim
