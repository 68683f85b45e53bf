// MuSGD census; see musgd_census.h.
#include "optim/musgd_census.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "optim/param_roles.h"

namespace detrain::optim {

double Census::matrices_per_shape() const {
  return distinct_shapes ? static_cast<double>(matrices) / static_cast<double>(distinct_shapes)
                         : 0.0;
}

double Census::matrices_per_key() const {
  return keys ? static_cast<double>(matrices) / static_cast<double>(keys) : 0.0;
}

Census census(const std::vector<model::ParamInfo>& params) {
  Census c;
  using Key = std::tuple<int, std::vector<int64_t>, std::string, std::string>;
  std::map<Key, int64_t> counts;
  std::set<std::tuple<std::vector<int64_t>, std::string, std::string>> shapes;
  std::set<int64_t> rows, cols;
  for (int g = 0; g < kNumGroups; ++g) c.groups.push_back({g, group_name(g)});
  for (const auto& info : params) {
    ++c.tensors;
    const auto& p = info.param;
    const bool matrix = p.dim() >= 2;
    if (!info.trainable) {
      if (matrix) ++c.frozen_matrices;
      continue;
    }
    const int group = group_index(info, /*muon_enabled=*/true);
    auto& g = c.groups[group];
    ++g.tensors;
    g.parameters += p.numel();
    if (!matrix) continue;
    ++c.matrices;
    ++g.matrices;
    const std::string dtype = c10::toString(p.scalar_type());
    const std::string device = p.device().str();
    ++counts[{group, p.sizes().vec(), dtype, device}];
    shapes.insert({p.sizes().vec(), dtype, device});
    const int64_t out = p.size(0), in = p.numel() / p.size(0);
    rows.insert(std::min(out, in));
    cols.insert(std::max(out, in));
  }
  for (const auto& [key, count] : counts) {
    const auto& [group, shape, dtype, device] = key;
    c.buckets.push_back({group, shape, dtype, device, count});
    ++c.groups[group].keys;
  }
  std::stable_sort(c.buckets.begin(), c.buckets.end(),
                   [](const CensusKey& a, const CensusKey& b) { return a.count > b.count; });
  c.distinct_shapes = static_cast<int64_t>(shapes.size());
  c.keys = static_cast<int64_t>(c.buckets.size());
  c.row_buckets = static_cast<int64_t>(rows.size());
  c.col_buckets = static_cast<int64_t>(cols.size());
  return c;
}

}  // namespace detrain::optim
