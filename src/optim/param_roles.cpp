// Parameter routing; see param_roles.h. Deliberate difference from the reference: the cls
// towers are found by module role (ParamInfo::in_cls_tower), not by the name regex "23.*cv3".
#include "optim/param_roles.h"

namespace detrain::optim {

ParamRole role_of(const model::ParamInfo& info, bool muon_enabled) {
  // Muon orthogonalises matrices and conv filters only (the reference's ndim in {2, 4}).
  const auto dim = info.param.dim();
  if (muon_enabled && (dim == 2 || dim == 4)) return ParamRole::kMuon;
  if (dim >= 2) return ParamRole::kWeight;
  if (info.is_bias) return ParamRole::kBias;
  if (info.in_norm) return ParamRole::kNorm;
  return ParamRole::kWeight;
}

int group_index(ParamRole role, bool cls_lr_mult, bool muon_enabled) {
  if (!muon_enabled) return static_cast<int>(role);
  return 2 * static_cast<int>(role) + (cls_lr_mult ? 0 : 1);
}

ParamRole group_role(int index, bool muon_enabled) {
  return static_cast<ParamRole>(muon_enabled ? index / 2 : index);
}

bool group_boosted(int index, bool muon_enabled) { return muon_enabled && index % 2 == 0; }

std::string group_name(int index, bool muon_enabled) {
  static const char* kRoles[] = {"weight", "bn", "bias", "muon"};
  return std::string(kRoles[static_cast<int>(group_role(index, muon_enabled))]) +
         (group_boosted(index, muon_enabled) ? "_cls" : "");
}

bool group_decays(int index, bool muon_enabled) {
  const auto role = group_role(index, muon_enabled);
  return role == ParamRole::kWeight || role == ParamRole::kMuon;
}

}  // namespace detrain::optim
