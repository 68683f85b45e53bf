// Parameter routing shared by the optimizer and the model census: each parameter gets a role
// (weight / bn / bias / muon) and belongs to one of eight groups in the reference order
// weight*mult, weight, bn*mult, bn, bias*mult, bias, muon*mult, muon (results.csv lr/pg0..7),
// where "*mult" are the head classification towers that train at cls_lr_mult x lr.
#pragma once

#include <string>

#include "model/param_info.h"

namespace detrain::optim {

enum class ParamRole { kWeight, kNorm, kBias, kMuon };

// Matrices (ndim >= 2) are `kMuon` when the optimizer has a Muon branch, else `kWeight`;
// then biases, then norm weights; anything else is a decayed `kWeight`.
ParamRole role_of(const model::ParamInfo& info, bool muon_enabled);

constexpr int kNumGroups = 8;

// Index 0..7 in the reference group order.
int group_index(ParamRole role, bool cls_lr_mult);
inline int group_index(const model::ParamInfo& info, bool muon_enabled) {
  return group_index(role_of(info, muon_enabled), info.in_cls_tower);
}

// "weight", "bn", "bias", "muon", with a "_cls" suffix for the multiplied groups.
std::string group_name(int index);

// Whether the group's parameters take weight decay (weight and muon groups do).
bool group_decays(int index);

}  // namespace detrain::optim
