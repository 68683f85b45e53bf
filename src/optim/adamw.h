// AdamW with named groups and state by parameter name, operation for operation like
// torch::optim::AdamW (decoupled decay p *= 1 - lr * wd, bias-corrected moments, no amsgrad);
// the reference trainer picks it for short runs under optimizer=auto. Beta1 is what
// momentum() reports; warmup leaves it alone, as the reference's does (its Adam groups have
// betas, not the "momentum" key its warmup ramps).
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "optim/optimizer.h"

namespace detrain::optim {

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

struct AdamWGroup {
  std::string name;
  AdamWOptions options;
  std::vector<std::string> names;  // parallel to params
  std::vector<torch::Tensor> params;
};

struct AdamWSlot {
  std::string name;
  torch::Tensor param;
  int64_t step = 0;
  torch::Tensor exp_avg, exp_avg_sq;  // undefined until the first step
};

struct AdamWGroupState {
  std::string name;
  AdamWOptions options;
  std::vector<AdamWSlot> slots;
};

class AdamW : public GroupedOptimizer<AdamWGroupState> {
 public:
  explicit AdamW(std::vector<AdamWGroup> groups);

  std::string kind() const override { return "adamw"; }
  void step() override;
  void zero_grad() override;

  double momentum(size_t group) const override { return groups_.at(group).options.beta1; }
  void set_momentum(size_t group, double m) override { groups_.at(group).options.beta1 = m; }
  bool warmup_ramps_momentum() const override { return false; }

  OptimizerSnapshot snapshot() const override;
  void restore(const OptimizerSnapshot& snapshot) override;

 private:
  using Slot = AdamWSlot;
  using Group = AdamWGroupState;
};

}  // namespace detrain::optim
