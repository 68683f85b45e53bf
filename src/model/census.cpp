// Model census; see census.h.
#include "model/census.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "common/strings.h"
#include "model/layers.h"
#include "model/yolo_model.h"
#include "optim/param_roles.h"

namespace detrain::model {

namespace {

bool has_activation_conv(const torch::nn::Module& root) {
  for (const auto& module : root.modules()) {
    if (auto conv = std::dynamic_pointer_cast<ConvImpl>(module)) {
      if (!conv->named_children().contains("act")) return true;
    }
  }
  return false;
}

}  // namespace

ModelTotals model_totals(const YoloModelImpl& model) {
  ModelTotals totals;
  // The reference counts leaf modules. Its Convs share one SiLU instance, listed once, and each
  // one-to-one tower deep-copied from the one-to-many towers holds one more copy of it.
  for (const auto& module : model.modules())
    if (module->children().empty()) ++totals.layers;
  if (has_activation_conv(model)) ++totals.layers;
  for (const auto& child : model.head()->named_children()) {
    if (starts_with(child.key(), "one2one_") && has_activation_conv(*child.value()))
      ++totals.layers;
  }
  for (const auto& p : model.parameters()) {
    ++totals.tensors;
    totals.parameters += p.numel();
    if (p.requires_grad()) totals.gradients += p.numel();
  }
  return totals;
}

int64_t layer_parameters(const YoloModelImpl& model, size_t index) {
  int64_t total = 0;
  for (const auto& p : model.layer(index)->parameters()) total += p.numel();
  return total;
}

double gflops(YoloModelImpl& model, int64_t imgsz) {
  const int64_t probe = 2 * model.max_stride();
  const bool was_training = model.is_training();
  model.eval();  // BN running statistics stay untouched
  MacCount macs;
  {
    torch::NoGradGuard no_grad;
    MacCountScope scope(macs);
    const auto device = model.parameters().front().device();
    const auto images = torch::zeros({1, 3, probe, probe}, torch::TensorOptions().device(device));
    if (model.fused())
      model.forward_eval(images);
    else
      model.forward_train(images);
  }
  model.train(was_training);
  const double area_ratio = static_cast<double>(imgsz * imgsz) / static_cast<double>(probe * probe);
  return 2.0 * (macs.linear * area_ratio + macs.quadratic * area_ratio * area_ratio) / 1e9;
}

double Census::matrices_per_shape() const {
  return distinct_shapes ? static_cast<double>(matrices) / static_cast<double>(distinct_shapes)
                         : 0.0;
}

double Census::matrices_per_key() const {
  return keys ? static_cast<double>(matrices) / static_cast<double>(keys) : 0.0;
}

Census census(const std::vector<ParamInfo>& params) {
  Census c;
  using Key = std::tuple<int, std::vector<int64_t>, std::string, std::string>;
  std::map<Key, int64_t> counts;
  std::set<std::tuple<std::vector<int64_t>, std::string, std::string>> shapes;
  std::set<int64_t> rows, cols;
  for (int g = 0; g < optim::kNumGroups; ++g) c.groups.push_back({g, optim::group_name(g)});
  for (const auto& info : params) {
    ++c.tensors;
    const auto& p = info.param;
    const bool matrix = p.dim() >= 2;
    if (!info.trainable) {
      if (matrix) ++c.frozen_matrices;
      continue;
    }
    const int group = optim::group_index(info, /*muon_enabled=*/true);
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

}  // namespace detrain::model
