// Model census; see census.h.
#include "model/census.h"

#include <algorithm>

#include "common/strings.h"
#include "model/layers.h"
#include "model/yolo_model.h"

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

}  // namespace detrain::model
