// See train_step.h.
#include "train/train_step.h"

#include <spdlog/fmt/fmt.h>

#include "compat/torch_compat.h"
#include "model/channels_last.h"
#include "optim/grad_clip.h"
#include "tasks/validation_run.h"
#include "train/divergence.h"
#include "train/output_tie.h"

namespace detrain::train {

StepOptions StepOptions::from(const config::TrainOptions& train, const torch::Device& device,
                              model::Precision precision) {
  StepOptions o;
  o.device = device;
  o.precision = precision;
  o.clip_grad_norm = train.clip_grad_norm;
  o.sync_bn = train.sync_bn;
  o.dist_verify = train.dist_verify;
  return o;
}

StepResult TrainStep::run(const data::Batch& batch, int64_t epoch, int64_t iter,
                          const optim::IterationHyper& hyper, double lr_scale,
                          ckpt::SchedulePosition& position) {
  optim::Optimizer& optimizer = *parts_.optimizer;
  for (size_t g = 0; g < optimizer.num_groups(); ++g) {
    optimizer.set_lr(g, hyper.lr[g] * lr_scale);
    if (optimizer.warmup_ramps_momentum()) optimizer.set_momentum(g, hyper.momentum);
  }
  const torch::Device& device = options_.device;
  // [B, 3, H, W] in [0, 1], in the model's memory format: float, or under BF16 autocast the bf16
  // values autocast would make of it.
  const torch::Tensor images =
      model::image_input(batch.images, device, parts_.model->memory_format(),
                         options_.precision == model::Precision::kBf16);
  // The criterion takes the bf16 head outputs and computes in fp32 itself.
  model::TrainOutput out;
  {
    model::AutocastScope autocast(options_.precision, device);
    out = parts_.model->forward_train(images);
  }
  const loss::LossResult l = (*parts_.criterion)(out, tasks::loss_targets(batch, device),
                                                 {images.size(2), images.size(3)});
  StepResult result;
  result.images = images.size(0);
  result.instances = batch.cls.size(0);
  result.imgsz = images.size(3);
  std::optional<std::string> bad = loss_problem(l.total.item<double>(), batch.cls.size(0));
  // Every rank rolls back when one diverged.
  if (world_.any(bad.has_value(), "the loss check") && !bad) bad = "another rank's loss";
  if (bad) {
    result.problem = fmt::format("{} at epoch {} iteration {}", *bad, epoch + 1, iter);
    return result;
  }
  const int64_t ni = epoch * position.batches_per_epoch + iter;
  const bool step_due =
      optim::TrainSchedule::optimizer_step_due(ni, position.last_step_ni, hyper.accumulate);
  // With synchronised BatchNorm, backward's collectives must be the same on every rank.
  const torch::Tensor loss =
      options_.sync_bn && world_.size() > 1 ? tie_head_outputs(l.total, out) : l.total;
  // The micro-batch that ends an accumulation all-reduces its gradients while backward runs;
  // the ones before it accumulate locally.
  world_.backward(loss, parts_.trainable, step_due);

  if (step_due) {
    const optim::GradNorm gn = optim::clip_grad_norm(parts_.trainable, options_.clip_grad_norm);
    if (!gn.finite) {
      result.problem =
          fmt::format("non-finite gradients at epoch {} iteration {}", epoch + 1, iter);
      return result;
    }
    optimizer.step();
    ++position.optimizer_steps;
    // Local BatchNorm statistics differ per rank; rank 0's go to all so the EMA agrees.
    if (!options_.sync_bn) world_.broadcast(parts_.model->buffers(), "BatchNorm buffers");
    parts_.ema->update();
    if (options_.dist_verify) {
      std::vector<torch::Tensor> state = module_state(*parts_.model);
      for (const auto& t : module_state(parts_.ema->module())) state.push_back(t);
      world_.check_same(
          state, fmt::format("after the optimizer step of epoch {} iteration {}", epoch + 1, iter));
    }
    optimizer.zero_grad();
    position.last_step_ni = ni;
    result.optimizer_stepped = true;
  }
  result.loss_items = l.items.detach();
  compat::synchronize(device);
  return result;
}

}  // namespace detrain::train
