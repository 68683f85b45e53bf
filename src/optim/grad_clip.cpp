// Gradient clipping with the finite check; see grad_clip.h.
#include "optim/grad_clip.h"

#include <cmath>

namespace detrain::optim {

GradNorm clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  GradNorm out;
  if (grads.empty()) return out;
  torch::NoGradGuard no_grad;
  // One fused norm per tensor, then one norm of the norms and a single device sync.
  const std::vector<torch::Tensor> norms = at::_foreach_norm(grads, 2);
  const torch::Tensor total = torch::stack(norms).to(torch::kFloat).norm(2);  // []
  out.total_norm = total.item<double>();
  out.finite = std::isfinite(out.total_norm);
  if (!out.finite || max_norm <= 0) return out;
  const double coef = max_norm / (out.total_norm + 1e-6);
  if (coef < 1.0) {
    at::_foreach_mul_(grads, coef);
    out.clipped = true;
  }
  return out;
}

}  // namespace detrain::optim
