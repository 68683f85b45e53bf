// See output_tie.h.
#include "train/output_tie.h"

#include <torch/autograd.h>

namespace detrain::train {

namespace {

// Identity on the loss; backward hands each tied tensor zeros of its shape. A custom function
// rather than `loss + 0 * t.sum()`, which would turn the loss into NaN when an unused output
// holds an inf.
class ZeroGradientTie : public torch::autograd::Function<ZeroGradientTie> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& loss,
                               at::TensorList tied) {
    ctx->save_for_backward(tied.vec());
    return loss.clone();
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad) {
    torch::autograd::variable_list out{grad[0]};
    for (const auto& t : ctx->get_saved_variables()) out.push_back(torch::zeros_like(t));
    return out;
  }
};

void add_branch(const model::BranchOutput& b, std::vector<torch::Tensor>& list) {
  for (const torch::Tensor* t : {&b.boxes, &b.scores, &b.kpts, &b.kpts_sigma})
    if (t->defined() && t->requires_grad()) list.push_back(*t);
}

}  // namespace

torch::Tensor tie_head_outputs(const torch::Tensor& loss, const model::TrainOutput& out) {
  std::vector<torch::Tensor> tied;
  add_branch(out.one2many, tied);
  add_branch(out.one2one, tied);
  if (tied.empty()) return loss;
  return ZeroGradientTie::apply(loss, at::TensorList(tied));
}

}  // namespace detrain::train
