// AdamW; see adamw.h. The step follows torch::optim::AdamW (LibTorch 1.13) line by line.
#include "optim/adamw.h"

#include <cmath>

#include "common/errors.h"

namespace detrain::optim {

AdamW::AdamW(std::vector<AdamWGroup> groups) {
  for (auto& in : groups) {
    TORCH_CHECK(in.names.size() == in.params.size(), "AdamW group '", in.name,
                "': names and parameters differ in number");
    Group group{in.name, in.options, {}};
    for (size_t i = 0; i < in.params.size(); ++i) {
      Slot slot;
      slot.name = in.names[i];
      slot.param = in.params[i];
      group.slots.push_back(std::move(slot));
    }
    groups_.push_back(std::move(group));
  }
}

void AdamW::step() {
  torch::NoGradGuard no_grad;
  for (auto& group : groups_) {
    const auto& o = group.options;
    for (auto& slot : group.slots) {
      auto& p = slot.param;
      if (!p.grad().defined()) continue;
      const auto& grad = p.grad();
      if (!slot.exp_avg.defined()) {
        slot.exp_avg = torch::zeros_like(p, torch::MemoryFormat::Preserve);
        slot.exp_avg_sq = torch::zeros_like(p, torch::MemoryFormat::Preserve);
      }
      if (o.weight_decay != 0) p.mul_(1 - o.lr * o.weight_decay);
      ++slot.step;
      const double bias_correction1 = 1 - std::pow(o.beta1, static_cast<double>(slot.step));
      const double bias_correction2 = 1 - std::pow(o.beta2, static_cast<double>(slot.step));
      slot.exp_avg.mul_(o.beta1).add_(grad, 1 - o.beta1);
      slot.exp_avg_sq.mul_(o.beta2).addcmul_(grad, grad, 1 - o.beta2);
      const auto denom = (slot.exp_avg_sq.sqrt() / std::sqrt(bias_correction2)).add_(o.eps);
      p.addcdiv_(slot.exp_avg, denom, -(o.lr / bias_correction1));
    }
  }
}

void AdamW::zero_grad() {
  torch::NoGradGuard no_grad;
  for (auto& group : groups_)
    for (auto& slot : group.slots)
      if (slot.param.grad().defined()) slot.param.mutable_grad().zero_();
}

OptimizerSnapshot AdamW::snapshot() const {
  OptimizerSnapshot snap;
  save_group_options(snap);
  for (const auto& group : groups_) {
    for (const auto& slot : group.slots) {
      if (!slot.exp_avg.defined()) continue;
      snap.scalars[slot.name + "/step"] = static_cast<double>(slot.step);
      snap.tensors.emplace_back(slot.name + "/exp_avg", slot.exp_avg.to(torch::kCPU).clone());
      snap.tensors.emplace_back(slot.name + "/exp_avg_sq", slot.exp_avg_sq.to(torch::kCPU).clone());
    }
  }
  return snap;
}

void AdamW::restore(const OptimizerSnapshot& snap) {
  restore_group_options(snap);
  for_each_state_entry(snap, [&](Slot& slot, const std::string& entry, const torch::Tensor& t) {
    // Laid out as the parameter (NCHW or channels-last), as zeros_like made it in the first step,
    // so a resumed step runs the same kernels as the uninterrupted one.
    const auto value = torch::empty_like(slot.param).copy_(t);
    if (entry == "exp_avg")
      slot.exp_avg = value;
    else
      slot.exp_avg_sq = value;
    const auto step = snap.scalars.find(slot.name + "/step");
    slot.step = step == snap.scalars.end() ? 0 : static_cast<int64_t>(step->second);
  });
}

}  // namespace detrain::optim
