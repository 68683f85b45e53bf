// Synchronised BatchNorm; see sync_batch_norm.h.
#include "model/sync_batch_norm.h"

#include "model/layers.h"

namespace detrain::model {

namespace {

// All-reduce (sum) as an autograd function: every rank's statistics feed every rank's output,
// so the gradient of the local contribution is the sum of all ranks' output gradients.
struct ReplicaSumFunction : torch::autograd::Function<ReplicaSumFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& local,
                               const Replicas* replicas) {
    // The replicas outlive the graph (they belong to the trainer), so a raw pointer is kept.
    ctx->saved_data["replicas"] = reinterpret_cast<int64_t>(replicas);
    return replicas->sum(local);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto* replicas = reinterpret_cast<const Replicas*>(ctx->saved_data["replicas"].toInt());
    return {replicas->sum(grads[0].contiguous()), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor sync_batch_norm(const torch::Tensor& x, torch::nn::BatchNorm2dImpl& bn,
                              const Replicas& replicas) {
  TORCH_CHECK(x.dim() == 4, "sync_batch_norm: expected [B, C, H, W], got ", x.sizes());
  const int64_t c = x.size(1), world = replicas.world_size;
  const auto xf = x.to(torch::kFloat);  // [B, C, H, W]
  // Each rank's count, mean and sum of squared deviations from its own mean (two exact local
  // passes), gathered as rows of a [world, 2C + 1] table by one sum; Chan's formula then
  // combines them without the cancellation of raw sums of squares.
  const auto local_mean = xf.mean({0, 2, 3});                                        // [C]
  const auto local_m2 = (xf - local_mean.view({1, c, 1, 1})).pow(2).sum({0, 2, 3});  // [C]
  const double count = static_cast<double>(x.numel() / c);
  const auto row = torch::cat({local_mean, local_m2, torch::full({1}, count, xf.options())});
  std::vector<torch::Tensor> rows;
  for (int64_t r = 0; r < world; ++r)
    rows.push_back(r == replicas.rank ? row : torch::zeros_like(row));
  const auto table = ReplicaSumFunction::apply(torch::stack(rows).view({-1}), &replicas)
                         .view({world, 2 * c + 1});                            // [W, 2C + 1]
  const auto means = table.narrow(1, 0, c);                                    // [W, C]
  const auto m2 = table.narrow(1, c, c);                                       // [W, C]
  const auto counts = table.narrow(1, 2 * c, 1).detach();                      // [W, 1]
  const auto n = counts.sum();                                                 // [] global count
  const auto mean = (counts * means).sum(0) / n;                               // [C]
  const auto var = (m2.sum(0) + (counts * (means - mean).pow(2)).sum(0)) / n;  // [C] biased
  const double eps = bn.options.eps();
  auto y = (xf - mean.view({1, c, 1, 1})) * (var + eps).rsqrt().view({1, c, 1, 1});
  if (bn.options.affine()) y = y * bn.weight.view({1, c, 1, 1}) + bn.bias.view({1, c, 1, 1});

  if (bn.options.track_running_stats()) {
    torch::NoGradGuard no_grad;
    const double m = bn.options.momentum().value_or(0.1);
    const auto total = n.item<double>();
    const auto unbiased = var.detach() * (total / std::max(total - 1.0, 1.0));
    bn.running_mean.mul_(1 - m).add_(mean.detach().to(bn.running_mean.scalar_type()), m);
    bn.running_var.mul_(1 - m).add_(unbiased.to(bn.running_var.scalar_type()), m);
    bn.num_batches_tracked.add_(1);
  }
  return y.to(x.scalar_type());
}

void set_sync_batch_norm(torch::nn::Module& root, std::shared_ptr<const Replicas> replicas) {
  for (const auto& m : root.modules(/*include_self=*/true))
    if (auto* conv = dynamic_cast<ConvImpl*>(m.get())) conv->set_sync_batch_norm(replicas);
}

}  // namespace detrain::model
