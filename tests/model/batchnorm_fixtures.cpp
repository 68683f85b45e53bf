// See batchnorm_fixtures.h.
#include "model/batchnorm_fixtures.h"

#include <algorithm>

namespace detrain::test {

void randomize_batchnorm(torch::nn::Module& model, uint64_t seed) {
  torch::NoGradGuard no_grad;
  auto generator = torch::make_generator<at::CPUGeneratorImpl>(seed);
  for (const auto& module : model.modules()) {
    if (auto* bn = module->as<torch::nn::BatchNorm2d>()) {
      bn->weight.uniform_(0.5, 1.5, generator);
      bn->bias.uniform_(-0.2, 0.2, generator);
      bn->running_mean.uniform_(-0.2, 0.2, generator);
      bn->running_var.uniform_(0.5, 2.0, generator);
    }
  }
}

torch::Tensor probe_loss(const model::TrainOutput& out) {
  auto generator = torch::make_generator<at::CPUGeneratorImpl>(17);
  torch::Tensor total = torch::zeros({});
  for (const model::BranchOutput* b : {&out.one2many, &out.one2one}) {
    if (!b->defined()) continue;
    for (const torch::Tensor& t : {b->boxes, b->scores, b->kpts, b->kpts_sigma})
      if (t.defined())
        total = total + (t.to(torch::kFloat) * torch::randn(t.sizes(), generator)).mean();
  }
  return total;
}

double largest_gradient(const torch::nn::Module& module) {
  double largest = 0;
  for (const auto& p : module.parameters())
    if (p.grad().defined()) largest = std::max(largest, p.grad().abs().max().item<double>());
  return largest;
}

}  // namespace detrain::test
