// Parameter groups; see param_groups.h.
#include "optim/param_groups.h"

#include "optim/param_roles.h"

namespace detrain::optim {

std::vector<ParamGroup> build_param_groups(const std::vector<model::ParamInfo>& params,
                                           const ParamGroupSettings& settings) {
  const bool muon = settings.muon;
  std::vector<ParamGroup> groups(group_count(muon));
  for (int g = 0; g < group_count(muon); ++g) {
    auto& group = groups[g];
    group.index = g;
    group.name = group_name(g, muon);
    group.lr = settings.lr0 * (group_boosted(g, muon) ? settings.cls_lr_mult : 1.0);
    group.weight_decay = group_decays(g, muon) ? settings.weight_decay : 0.0;
    group.muon = group_role(g, muon) == ParamRole::kMuon;
  }
  for (const auto& info : params) {
    if (!info.trainable) continue;
    auto& group = groups[group_index(info, settings.muon)];
    group.names.push_back(info.name);
    group.params.push_back(info.param);
  }
  return groups;
}

double batch_scaled_decay(double weight_decay, int64_t batch, int64_t accumulate, int64_t nbs) {
  return weight_decay * static_cast<double>(batch) * static_cast<double>(accumulate) /
         static_cast<double>(nbs);
}

}  // namespace detrain::optim
