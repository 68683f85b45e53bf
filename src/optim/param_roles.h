// Parameter routing shared by the optimizer and the model census: each parameter gets a role
// (weight / bn / bias / muon) and belongs to a group in the reference order. With MuSGD there
// are eight: weight*mult, weight, bn*mult, bn, bias*mult, bias, muon*mult, muon (results.csv
// lr/pg0..7), where "*mult" are the head classification towers (cv3, one2one_cv3) that train at
// cls_lr_mult x lr; with SGD and AdamW three: weight, bn, bias (lr/pg0..2), as Ultralytics
// 8.4.190's build_optimizer makes them.
#pragma once

#include <string>

#include "model/param_info.h"

namespace detrain::optim {

enum class ParamRole { kWeight, kNorm, kBias, kMuon };

// Matrices (ndim >= 2) are `kMuon` when the optimizer has a Muon branch, else `kWeight`;
// then biases, then norm weights; anything else is a decayed `kWeight`.
ParamRole role_of(const model::ParamInfo& info, bool muon_enabled);

constexpr int kNumGroups = 8;       // with a Muon branch
constexpr int kNumPlainGroups = 3;  // without

inline int group_count(bool muon_enabled) { return muon_enabled ? kNumGroups : kNumPlainGroups; }

// Index in the reference group order (0..7 with Muon, 0..2 without).
int group_index(ParamRole role, bool cls_lr_mult, bool muon_enabled);
inline int group_index(const model::ParamInfo& info, bool muon_enabled) {
  return group_index(role_of(info, muon_enabled), info.in_cls_tower, muon_enabled);
}

// The role of group `index`; whether it is a cls-multiplied group (Muon groupings only).
ParamRole group_role(int index, bool muon_enabled);
bool group_boosted(int index, bool muon_enabled);

// "weight", "bn", "bias", "muon", with a "_cls" suffix for the multiplied groups.
std::string group_name(int index, bool muon_enabled = true);

// Whether the group's parameters take weight decay (weight and muon groups do).
bool group_decays(int index, bool muon_enabled = true);

}  // namespace detrain::optim
