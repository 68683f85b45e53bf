// The parameter groups the trainer optimises, in the reference order: under MuSGD eight,
// weight*mult, weight, bn*mult, bn, bias*mult, bias, muon*mult, muon (lr/pg0..7); under SGD and
// AdamW three, weight, bn, bias (lr/pg0..2). Each has its lr and decay. Roles come from
// optim::role_of (module types, never name regexes). One difference from the reference: frozen
// parameters are left out (they never get a gradient there either).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model/param_info.h"

namespace detrain::optim {

struct ParamGroupSettings {
  bool muon = true;           // matrices go to the muon groups (MuSGD), else to weight groups
  double lr0 = 0.01;          // base learning rate
  double cls_lr_mult = 3.0;   // lr multiplier of the *_cls groups (only when `muon`)
  double weight_decay = 0.0;  // decay of the weight and muon groups (already batch-scaled)
};

struct ParamGroup {
  int index = 0;
  std::string name;  // optim::group_name(index)
  double lr = 0.0;
  double weight_decay = 0.0;
  bool muon = false;               // a muon group: its matrices take the Muon branch
  std::vector<std::string> names;  // reference parameter names, parallel to params
  std::vector<torch::Tensor> params;
};

// All groups of the grouping, empty ones included, so indices match the reference's lr/pg*.
std::vector<ParamGroup> build_param_groups(const std::vector<model::ParamInfo>& params,
                                           const ParamGroupSettings& settings);

// The reference trainer's decay scaling: weight_decay * batch * accumulate / nbs.
double batch_scaled_decay(double weight_decay, int64_t batch, int64_t accumulate, int64_t nbs);

}  // namespace detrain::optim
