// Parameter routing; see param_roles.h. Deliberate difference from the reference: the cls
// towers are found by module role (ParamInfo::in_cls_tower), not by the name regex "23.*cv3".
#include "optim/param_roles.h"

namespace detrain::optim {

ParamRole role_of(const model::ParamInfo& info, bool muon_enabled) {
  if (info.param.dim() >= 2) return muon_enabled ? ParamRole::kMuon : ParamRole::kWeight;
  if (info.is_bias) return ParamRole::kBias;
  if (info.in_norm) return ParamRole::kNorm;
  return ParamRole::kWeight;
}

int group_index(ParamRole role, bool cls_lr_mult) {
  return 2 * static_cast<int>(role) + (cls_lr_mult ? 0 : 1);
}

std::string group_name(int index) {
  static const char* kRoles[] = {"weight", "bn", "bias", "muon"};
  return std::string(kRoles[index / 2]) + (index % 2 == 0 ? "_cls" : "");
}

bool group_decays(int index) {
  const auto role = static_cast<ParamRole>(index / 2);
  return role == ParamRole::kWeight || role == ParamRole::kMuon;
}

}  // namespace detrain::optim
