// The YOLO network; see yolo_model.h.
#include "model/yolo_model.h"

#include <unordered_set>

#include "model/channels_last.h"
#include "model/state_dict.h"

namespace detrain::model {

namespace {

bool is_norm(const torch::nn::Module& module) {
  return dynamic_cast<const torch::nn::BatchNorm2dImpl*>(&module) ||
         dynamic_cast<const torch::nn::BatchNorm1dImpl*>(&module) ||
         dynamic_cast<const torch::nn::LayerNormImpl*>(&module) ||
         dynamic_cast<const torch::nn::GroupNormImpl*>(&module);
}

}  // namespace

YoloModelImpl::YoloModelImpl(const BuildOptions& options) {
  Network net = build_network(options);
  arch_ = std::move(net.arch);
  rows_ = std::move(net.rows);
  layers_ = std::move(net.layers);
  head_ = std::move(net.head);
  model_ = register_module("model", torch::nn::ModuleList());
  for (auto& layer : layers_) model_->push_back(layer.ptr());
  model_->push_back(head_);
  keep_output_.assign(rows_.size(), false);
  for (size_t i = 0; i < rows_.size(); ++i) {
    for (int f : rows_[i].from) {
      // Layers read by the head or by a layer other than the next one are kept.
      if (f >= 0 && (f + 1 != static_cast<int>(i) || i + 1 == rows_.size())) keep_output_[f] = true;
    }
  }
}

std::vector<torch::Tensor> YoloModelImpl::head_inputs(const torch::Tensor& images) {
  TORCH_CHECK(images.dim() == 4 && images.size(1) == 3, "model input must be [B, 3, H, W], got ",
              images.sizes());
  TORCH_CHECK(images.size(2) % max_stride() == 0 && images.size(3) % max_stride() == 0,
              "model input height and width must be multiples of ", max_stride(), ", got ",
              images.size(2), "x", images.size(3));
  const torch::Tensor input = images.contiguous(torch_memory_format(memory_format_));
  std::vector<torch::Tensor> outputs(rows_.size());  // kept layer outputs
  torch::Tensor x = input;                           // output of the previous layer
  auto input_of = [&](int f) { return f < 0 ? input : outputs[f]; };
  for (size_t i = 0; i < layers_.size(); ++i) {
    const auto& from = rows_[i].from;
    if (rows_[i].module == "Concat") {
      std::vector<torch::Tensor> inputs;
      for (int f : from) inputs.push_back(f == static_cast<int>(i) - 1 ? x : input_of(f));
      x = layers_[i].forward(std::move(inputs));
    } else {
      x = layers_[i].forward(from[0] == static_cast<int>(i) - 1 ? x : input_of(from[0]));
    }
    if (keep_output_[i]) outputs[i] = x;
  }
  std::vector<torch::Tensor> feats;
  for (int f : rows_.back().from) feats.push_back(outputs[f]);
  return feats;
}

TrainOutput YoloModelImpl::forward_train(const torch::Tensor& images) {
  TORCH_CHECK(!fused(), "a fused model is inference-only; build it again to train");
  return head_->forward_train(head_inputs(images));
}

EvalOutput YoloModelImpl::forward_eval(const torch::Tensor& images, int64_t max_det, bool one2one,
                                       bool agnostic) {
  return head_->forward_eval(head_inputs(images), max_det, one2one, agnostic);
}

std::vector<ParamInfo> YoloModelImpl::param_infos() const {
  std::unordered_set<const torch::nn::Module*> cls_modules;
  for (const auto* tower : head_->cls_towers()) {
    cls_modules.insert(tower);
    for (const auto& child : tower->modules(/*include_self=*/false))
      cls_modules.insert(child.get());
  }
  std::vector<ParamInfo> infos;
  for (const auto& item : named_modules("", /*include_self=*/true)) {
    const auto& module = *item.value();
    const bool norm = is_norm(module);
    const bool cls = cls_modules.count(&module) > 0;
    for (const auto& p : module.named_parameters(/*recurse=*/false)) {
      ParamInfo info;
      info.name = item.key().empty() ? p.key() : item.key() + "." + p.key();
      info.param = p.value();
      info.in_norm = norm;
      info.is_bias = p.key() == "bias";
      info.in_cls_tower = cls;
      info.trainable = p.value().requires_grad();
      infos.push_back(std::move(info));
    }
  }
  return infos;
}

void YoloModelImpl::fuse() {
  head_->fuse();
  fuse_conv_bn(*this);
  convert_to_memory_format(*this, memory_format_);  // the folded convs are new NCHW tensors
  eval();
}

void YoloModelImpl::set_memory_format(MemoryFormat format) {
  memory_format_ = format;
  convert_to_memory_format(*this, format);
}

namespace {
BuildOptions build_options(const config::ModelOptions& options, int64_t dataset_nc,
                           std::optional<std::array<int64_t, 2>> dataset_kpt_shape) {
  BuildOptions build;
  build.arch = options.arch;
  // A scale letter in the name (yolo26s.yaml) takes precedence over model.scale.
  build.scale = resolve_arch(options.arch).second.empty() ? options.scale : "";
  build.nc = options.nc > 0 ? options.nc : dataset_nc;
  build.kpt_shape = dataset_kpt_shape;
  build.cls_width = options.cls_width;
  return build;
}
}  // namespace

void check_model(const config::ModelOptions& options) {
  check_network(build_options(options, 0, std::nullopt));
}

YoloModel make_model(const config::ModelOptions& options, int64_t dataset_nc,
                     std::optional<std::array<int64_t, 2>> dataset_kpt_shape) {
  YoloModel model(build_options(options, dataset_nc, dataset_kpt_shape));
  if (!options.weights.empty()) load_weights(*model, options.weights);
  return model;
}

}  // namespace detrain::model
