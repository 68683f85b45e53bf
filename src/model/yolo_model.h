// A YOLO network built from an architecture YAML: the layers `model.0 ... model.N-1` and the
// head `model.N`, with the training and inference forwards, the optimizer's view of the
// parameters (ParamInfo from module types) and Conv+BN fusion. Parameter and buffer names are
// the reference's, so its state dicts load by name (see state_dict.h).
#pragma once

#include <torch/torch.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "config/model_options.h"
#include "model/builder.h"
#include "model/heads.h"
#include "model/memory_format.h"
#include "model/param_info.h"

namespace detrain::model {

class YoloModelImpl : public torch::nn::Module {
 public:
  explicit YoloModelImpl(const BuildOptions& options);

  // images: [B, 3, H, W] float RGB in [0, 1], H and W multiples of the largest stride, in any
  // layout (converted to the model's memory format first; a no-op when already in it).
  // Training graph of every branch (what the loss consumes); BN follows the module's mode.
  TrainOutput forward_train(const torch::Tensor& images);
  // Inference graph: decoded predictions, plus top-k detections for end2end models.
  // one2one, agnostic: see HeadImpl::forward_eval (one2one false: the one-to-many branch + NMS
  // decode; agnostic: a class-agnostic one-to-one top-k).
  EvalOutput forward_eval(const torch::Tensor& images, int64_t max_det = 300, bool one2one = true,
                          bool agnostic = false);

  // Every parameter in the reference's named_parameters() order, with its role taken from the
  // owning module's type: BatchNorm -> in_norm, head cls towers -> in_cls_tower, frozen ->
  // trainable false.
  std::vector<ParamInfo> param_infos() const;

  // Folds BN into convs and drops the training-only branches; the model is inference-only
  // afterwards (forward_train throws) and is put in eval mode.
  void fuse();
  bool fused() const { return head_->fused(); }

  // The layout of the 4-D parameters and buffers and of the activations (runtime.memory_format):
  // converts them in place (model/channels_last.h), and the input of every forward from then on.
  // New, module-sized state stays in it: fuse() converts the folded weights too.
  void set_memory_format(MemoryFormat format);
  MemoryFormat memory_format() const { return memory_format_; }

  const ArchInfo& arch() const { return arch_; }
  const std::vector<LayerRow>& rows() const { return rows_; }
  const std::vector<int64_t>& strides() const { return arch_.strides; }
  int64_t max_stride() const { return arch_.strides.back(); }
  Head head() const { return head_; }
  // The module of layer i (the head for the last row).
  std::shared_ptr<torch::nn::Module> layer(size_t i) const { return model_->ptr(i); }

 private:
  std::vector<torch::Tensor> head_inputs(const torch::Tensor& images);

  ArchInfo arch_;
  std::vector<LayerRow> rows_;
  std::vector<torch::nn::AnyModule> layers_;
  std::vector<bool> keep_output_;  // whether a later layer reads layer i's output
  torch::nn::ModuleList model_{nullptr};
  Head head_{nullptr};
  MemoryFormat memory_format_ = MemoryFormat::kNchw;
};
TORCH_MODULE(YoloModel);

// The model the `model.*` options describe: model.arch at model.scale with nc = model.nc, else
// `dataset_nc`, else the YAML's; keypoint shape from the data set when given; then the weights
// of model.weights (a safetensors state dict by reference name) when set.
// Reads and checks model.arch as make_model would, building nothing: a bad YAML fails here,
// before a run reads its data or creates its directory.
void check_model(const config::ModelOptions& options);

YoloModel make_model(const config::ModelOptions& options, int64_t dataset_nc = 0,
                     std::optional<std::array<int64_t, 2>> dataset_kpt_shape = std::nullopt);

}  // namespace detrain::model
