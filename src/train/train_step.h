// One training iteration's maths, on its own: learning rates for the iteration, forward under
// autocast, the loss, the divergence check, backward (on an accumulation boundary with the
// gradient average over the world running alongside), and on that boundary clipping, the
// optimizer step, the BatchNorm broadcast, the EMA update and the weights check. The loop
// (trainer.cpp) feeds batches and reads the result; what a step does is here, top to bottom.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "ckpt/checkpoint.h"
#include "data/collate.h"
#include "dist/world.h"
#include "model/precision.h"
#include "optim/schedule.h"
#include "train/train_parts.h"

namespace detrain::train {

struct StepOptions {
  torch::Device device{torch::kCPU};
  model::Precision precision = model::Precision::kBf16;
  double clip_grad_norm = 10.0;  // train.clip_grad_norm (0: off)
  bool sync_bn = false;          // train.sync_bn: BatchNorm statistics are already global
  bool dist_verify = false;      // train.dist_verify: check the ranks' weights after each step

  static StepOptions from(const config::TrainOptions& train, const torch::Device& device,
                          model::Precision precision);
};

struct StepResult {
  // Why the step was not taken (non-finite loss or gradients, here or on another rank); the
  // weights are then as before the step and the loop rolls back.
  std::optional<std::string> problem;
  torch::Tensor loss_items;        // [n] the criterion's items (detached)
  bool optimizer_stepped = false;  // this iteration ended an accumulation
  int64_t images = 0;              // B
  int64_t instances = 0;           // targets in the batch
  int64_t imgsz = 0;               // batch width (px)
};

class TrainStep {
 public:
  TrainStep(TrainParts& parts, dist::World& world, StepOptions options)
      : parts_(parts), world_(world), options_(std::move(options)) {}

  // Iteration `iter` of epoch `epoch` with `hyper` (its learning rates scaled by `lr_scale`);
  // advances position.optimizer_steps and position.last_step_ni when the optimizer steps.
  StepResult run(const data::Batch& batch, int64_t epoch, int64_t iter,
                 const optim::IterationHyper& hyper, double lr_scale,
                 ckpt::SchedulePosition& position);
  // The precision of the following steps' forward passes (train.precision=auto's re-check).
  void set_precision(model::Precision precision) { options_.precision = precision; }

 private:
  TrainParts& parts_;
  dist::World& world_;
  StepOptions options_;
};

}  // namespace detrain::train
