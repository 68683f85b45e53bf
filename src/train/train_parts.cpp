// See train_parts.h.
#include "train/train_parts.h"

#include <spdlog/spdlog.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "ckpt/initial_weights.h"
#include "common/errors.h"
#include "data/ultralytics_data_yaml.h"
#include "model/freeze.h"
#include "model/sync_batch_norm.h"
#include "optim/optimizer_factory.h"
#include "optim/optimizer_plan.h"
#include "tasks/inference_model.h"
#include "weights/ultralytics_pt.h"

namespace detrain::train {

namespace {

void log_record_stats(const std::string& split, const data::RecordStats& s) {
  spdlog::info(
      "{}: {} images ({} backgrounds), {} crowd regions kept apart, {} boxes clipped, "
      "{} empty boxes dropped, {} images missing",
      split, s.images, s.backgrounds, s.crowd, s.clipped, s.dropped_empty, s.images_missing);
}

}  // namespace

void log_skipped_images(const TrainingData& data, const data::Loader& loader) {
  const data::RecordStats& records = data.train_records.stats;
  const int64_t total = records.images_missing + loader.stats().corrupt_images;
  if (total == 0) return;
  spdlog::warn("skipped {} training image(s): {} missing, {} that did not decode", total,
               records.images_missing, loader.stats().corrupt_images);
}

ckpt::ArchIdentity arch_identity(const model::YoloModelImpl& model) {
  const auto& a = model.arch();
  ckpt::ArchIdentity id;
  id.arch_file = a.path;
  std::ifstream in(a.path);
  std::stringstream text;
  text << in.rdbuf();
  id.arch_hash = ckpt::content_hash(text.str());
  id.scale = a.scale;
  id.nc = a.nc;
  if (model.head()->options().pose()) id.kpt_shape = {a.kpt_shape[0], a.kpt_shape[1]};
  return id;
}

std::vector<torch::Tensor> module_state(torch::nn::Module& m) {
  std::vector<torch::Tensor> out = m.parameters();
  for (const auto& b : m.buffers()) out.push_back(b);
  return out;
}

TrainingData build_training_data(const config::Experiment& x) {
  model::check_model(x.model);  // a bad model YAML fails before any data is read
  TrainingData d;
  d.dataset = data::load_dataset(x.data.dataset, x.data.root);
  // An Ultralytics .pt names its classes; a data YAML with `nc` alone does not.
  std::error_code ec;
  if (weights::is_ultralytics_pt(x.model.weights) &&
      data::placeholder_class_names(d.dataset.names) &&
      std::filesystem::is_regular_file(x.model.weights, ec))
    tasks::use_file_class_names(weights::read_ultralytics_pt(x.model.weights).names,
                                x.model.weights, d.dataset);
  d.train_records = data::load_records(d.dataset, "train", data::RecordOptions::from(x.data, true));
  log_record_stats("train", d.train_records.stats);
  return d;
}

TrainParts build_parts(const config::Experiment& x, const TrainingData& data, dist::World& world,
                       const torch::Device& device, bool bf16, model::MemoryFormat layout) {
  const data::DatasetInfo& dataset = data.dataset;
  TrainParts p;
  std::optional<std::array<int64_t, 2>> kpt_shape;
  if (dataset.has_keypoints())
    kpt_shape = std::array<int64_t, 2>{dataset.kpt_count, dataset.kpt_dims};

  config::ModelOptions build = x.model;
  build.weights.clear();  // a checkpoint, a run directory or safetensors: loaded just below
  p.model = model::make_model(build, dataset.nc(), kpt_shape);
  if (!x.model.weights.empty())
    ckpt::load_initial_weights(*p.model, arch_identity(*p.model), x.model.weights, dataset.names);
  if (p.model->head()->options().pose() && !dataset.has_keypoints())
    throw DataError(x.data.dataset + ": the data set has no kpt_shape but " + x.model.arch +
                    " is a pose model; add kpt_shape, flip_idx and oks_sigmas to the descriptor "
                    "or train a detection architecture");
  p.model->to(device);
  p.model->set_memory_format(layout);
  // Same seed, same init; the broadcast makes it so whatever a rank's RNG did.
  world.broadcast(module_state(*p.model), "initial weights");
  const auto replicas = world.replicas();
  if (replicas && x.train.sync_bn) model::set_sync_batch_norm(*p.model, replicas);
  p.bn_silu = model::choose_bn_silu(x.runtime.bn_silu, device);
  model::set_bn_silu_kernel(*p.model, p.bn_silu.kernel);
  p.arch = arch_identity(*p.model);
  p.ema_model = model::make_model(build, dataset.nc(), kpt_shape);
  p.ema_model->to(device);
  p.ema_model->set_memory_format(layout);  // ModelEma copies the model's tensors, layout and all
  p.ema =
      std::make_unique<optim::ModelEma>(p.ema_model.ptr(), *p.model, optim::ema_options(x.train));

  p.params = p.model->param_infos();
  model::freeze_layers(p.params, x.train.freeze);
  for (const auto& info : p.params)
    if (info.trainable) p.trainable.push_back(info.param);

  p.criterion = loss::make_criterion(p.model->head()->options(), x.loss, dataset.oks_sigmas,
                                     p.model->head()->flow());
  if (replicas) p.criterion->set_replicas(*replicas);

  data::LoaderOptions train_opts =
      data::LoaderOptions::from(x.data, static_cast<uint64_t>(x.runtime.seed), /*train=*/true);
  train_opts.stride = static_cast<int>(p.model->max_stride());
  train_opts.pin_memory = device.is_cuda();
  train_opts.channels_last = layout == model::MemoryFormat::kNhwc;
  train_opts.batch = x.data.batch / world.size();  // this rank's share
  train_opts.rank = world.rank();
  train_opts.world_size = world.size();
  p.train_loader =
      std::make_unique<data::Loader>(dataset, data.train_records.images, x.augment, train_opts);

  const optim::OptimizerPlan plan = optim::plan_optimizer(
      x, static_cast<int64_t>(data.train_records.images.size()), p.model->arch().nc);
  p.optimizer = optim::build_optimizer(p.params, x.optim, plan.run);
  for (size_t g = 0; g < p.optimizer->num_groups(); ++g)
    p.schedule_groups.push_back(
        {p.optimizer->lr(g), p.optimizer->group_name(g).find("bias") != std::string::npos});
  p.schedule = std::make_unique<optim::TrainSchedule>(
      plan.settings, p.train_loader->batches_per_epoch(), p.schedule_groups);

  if (world.is_main())
    p.validation =
        std::make_unique<tasks::ValidationRun>(x, dataset, x.val.split, *p.model, device, bf16);
  return p;
}

infer::ValidationResult validate_ema(TrainParts& parts, const infer::BatchObserver& observer) {
  loss::Criterion& criterion = *parts.criterion;
  struct ReplicasAside {
    loss::Criterion& criterion;
    const Replicas saved;
    ~ReplicasAside() { criterion.set_replicas(saved); }
  } aside{criterion, criterion.replicas()};
  criterion.set_replicas({});
  return parts.validation->run(*parts.ema_model, observer, &criterion);
}

}  // namespace detrain::train
