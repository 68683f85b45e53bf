// What a training run is made of, built once from the resolved config: the training data, the
// model and its EMA, the trainable parameters, the criterion, the loader, the optimizer and its
// schedule, and (rank 0) the validation run. The build_* functions hold the wiring; the loop
// in trainer.cpp only uses the parts.
#pragma once

#include <memory>
#include <vector>

#include "ckpt/checkpoint.h"
#include "config/config.h"
#include "data/coco_records.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "dist/world.h"
#include "loss/criterion.h"
#include "model/bn_silu.h"
#include "model/param_info.h"
#include "model/yolo_model.h"
#include "optim/ema.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "tasks/validation_run.h"

namespace detrain::train {

// The data set descriptor and its scanned training records.
struct TrainingData {
  data::DatasetInfo dataset;
  data::Records train_records;
};

struct TrainParts {
  model::YoloModel model{nullptr};
  std::unique_ptr<optim::ModelEma> ema;
  model::YoloModel ema_model{nullptr};  // the network `ema` averages into (what validates)
  ckpt::ArchIdentity arch;
  std::vector<model::ParamInfo> params;  // every parameter, frozen ones marked
  std::vector<torch::Tensor> trainable;  // the ones the optimizer and gradient sums see
  std::unique_ptr<loss::Criterion> criterion;
  std::unique_ptr<data::Loader> train_loader;
  std::unique_ptr<optim::Optimizer> optimizer;
  std::unique_ptr<optim::TrainSchedule> schedule;
  std::vector<optim::GroupSchedule> schedule_groups;  // what `schedule` was built from
  std::unique_ptr<tasks::ValidationRun> validation;   // rank 0 only (the others never validate)
  model::BnSiluDecision bn_silu;  // runtime.bn_silu, applied to `model`'s Conv blocks
};

// Checks the model YAML (before any data is read), loads the descriptor and scans the
// training split, logging what the scan kept and dropped.
TrainingData build_training_data(const config::Experiment& x);

// Builds every part in the order that fixes the run's random numbers (model, EMA model,
// criterion, loader), on `device`: rank 0's initial weights are broadcast, BatchNorm is
// synchronised under train.sync_bn, and the loader reads this rank's share of the batch. The
// model and its EMA twin are in `layout` before the optimizer and the EMA take their tensors.
TrainParts build_parts(const config::Experiment& x, const TrainingData& data, dist::World& world,
                       const torch::Device& device, bool bf16,
                       model::MemoryFormat layout = model::MemoryFormat::kNchw);

// Validates the EMA model (rank 0, alone): the criterion's replicas are set aside for the pass,
// so its validation losses use local normalisers instead of a collective the other ranks never
// join, and are back when it returns or throws.
infer::ValidationResult validate_ema(TrainParts& parts, const infer::BatchObserver& observer);

// The end-of-run total of training images left out: missing at the scan, or not decodable.
void log_skipped_images(const TrainingData& data, const data::Loader& loader);

// The identity checkpoints carry for `model` (its YAML's content hash, scale, nc, keypoints).
ckpt::ArchIdentity arch_identity(const model::YoloModelImpl& model);

// Parameters and buffers of `m` (what the initial broadcast and the weights check cover).
std::vector<torch::Tensor> module_state(torch::nn::Module& m);

}  // namespace detrain::train
