// The training loop; see trainer.h. Reading order: setup (data, model, EMA, criterion,
// optimizer, schedule, run directory), resume, then the epoch loop with its iteration body,
// validation and checkpoints.
#include "train/trainer.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "common/errors.h"
#include "common/log.h"
#include "common/memory.h"
#include "common/progress.h"
#include "common/runtime.h"
#include "common/timer.h"
#include "compat/torch_compat.h"
#include "data/coco_records.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "eval/coco_json.h"
#include "eval/predictions_json.h"
#include "eval/validate.h"
#include "loss/criterion.h"
#include "model/state_dict.h"
#include "model/sync_batch_norm.h"
#include "model/yolo_model.h"
#include "optim/ema.h"
#include "optim/optimizer.h"
#include "optim/optimizer_factory.h"
#include "optim/param_roles.h"
#include "optim/schedule.h"
#include "train/batch_plots.h"
#include "train/best_checkpoint.h"
#include "train/checkpoint.h"
#include "train/checkpoint_files.h"
#include "train/distributed.h"
#include "train/divergence.h"
#include "train/inference_model.h"
#include "train/initial_weights.h"
#include "train/metrics_log.h"
#include "train/plots.h"
#include "train/precision.h"
#include "train/run_dir.h"
#include "train/run_log.h"
#include "train/val_plots.h"
#include "train/validation_run.h"

namespace detrain::train {

namespace fs = std::filesystem;

namespace {

// Head outputs in fp32 for the loss (autocast leaves them in bf16).
model::BranchOutput branch_to_float(const model::BranchOutput& b) {
  auto f = [](const torch::Tensor& t) { return t.defined() ? t.to(torch::kFloat) : t; };
  return {f(b.boxes), f(b.scores), f(b.kpts), f(b.kpts_sigma)};
}
model::TrainOutput to_float(const model::TrainOutput& out) {
  model::TrainOutput r;
  r.one2many = branch_to_float(out.one2many);
  r.one2one = branch_to_float(out.one2one);
  r.feats = out.feats;
  return r;
}

void log_record_stats(const std::string& split, const data::RecordStats& s) {
  spdlog::info(
      "{}: {} images ({} backgrounds), {} crowd regions kept apart, {} boxes clipped, "
      "{} empty boxes dropped, {} images missing",
      split, s.images, s.backgrounds, s.crowd, s.clipped, s.dropped_empty, s.images_missing);
}

// The end-of-run total of training images left out: missing at the scan, or not decodable.
void log_skipped_images(const data::RecordStats& records, const data::LoaderStats& loader) {
  const int64_t total = records.images_missing + loader.corrupt_images;
  if (total == 0) return;
  spdlog::warn("skipped {} training image(s): {} missing, {} that did not decode", total,
               records.images_missing, loader.corrupt_images);
}

// Parameters of the layers named in train.freeze (model.N...) stop training.
void freeze_layers(std::vector<model::ParamInfo>& infos, const std::vector<int64_t>& layers) {
  for (auto& info : infos) {
    for (int64_t layer : layers) {
      const std::string prefix = "model." + std::to_string(layer) + ".";
      if (info.name.rfind(prefix, 0) == 0) {
        info.trainable = false;
        info.param.set_requires_grad(false);
      }
    }
  }
}

ArchIdentity arch_identity(const model::YoloModelImpl& model) {
  const auto& a = model.arch();
  ArchIdentity id;
  id.arch_file = a.path;
  std::ifstream in(a.path);
  std::stringstream text;
  text << in.rdbuf();
  id.arch_hash = content_hash(text.str());
  id.scale = a.scale;
  id.nc = a.nc;
  if (model.head()->options().pose()) id.kpt_shape = {a.kpt_shape[0], a.kpt_shape[1]};
  return id;
}

NamedTensors named_grads(const std::vector<model::ParamInfo>& infos) {
  NamedTensors grads;
  for (const auto& info : infos)
    if (info.param.grad().defined()) grads.emplace_back(info.name, info.param.grad().clone());
  return grads;
}

const torch::Tensor* find_tensor(const NamedTensors& tensors, const std::string& name) {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

// Running means of the loss items over the epoch (what the progress line and logs show).
struct RunningLoss {
  torch::Tensor sum;  // [n] float64
  int64_t count = 0;
  void add(const torch::Tensor& items) {
    const torch::Tensor d = items.detach().to(torch::kCPU, torch::kDouble);
    sum = sum.defined() ? sum + d : d;
    ++count;
  }
  std::vector<std::pair<std::string, double>> means(const std::vector<std::string>& names) const {
    std::vector<std::pair<std::string, double>> out;
    for (size_t i = 0; i < names.size(); ++i)
      out.emplace_back(names[i], count ? sum[static_cast<int64_t>(i)].item<double>() / count : 0.0);
    return out;
  }
};

double memory_gb(const torch::Device& device) {
  if (device.is_cuda()) return compat::cuda_memory_stats(device).reserved_bytes / 1e9;
  return resident_memory_bytes() / 1e9;
}

// metrics/precision and metrics/recall columns from a COCO result: per category (with GT) the
// point of its IoU-0.5 precision/recall curve (area all, largest maxDets) with the highest F1,
// averaged over categories. The reference picks one confidence for all classes by the
// class-mean F1 of its own curves; this is the closest reading of COCO's arrays.
std::pair<double, double> precision_recall(const eval::CocoEvalResult& r) {
  double p_sum = 0, r_sum = 0;
  int n = 0;
  const int a = 0, m = r.num_max_dets - 1;
  const auto& recall_thresholds = r.params.recall_thresholds;
  for (int k = 0; k < r.num_categories; ++k) {
    if (r.recall_at(0, k, a, m) < 0) continue;  // no GT in this category
    double best_f1 = -1, best_p = 0, best_r = 0;
    for (int i = 0; i < r.num_recall; ++i) {
      const double p = r.precision_at(0, i, k, a, m);
      const double rc = recall_thresholds[static_cast<size_t>(i)];
      if (p <= 0) continue;  // recall not reached
      const double f1 = 2 * p * rc / (p + rc + 1e-16);
      if (f1 > best_f1) {
        best_f1 = f1;
        best_p = p;
        best_r = rc;
      }
    }
    p_sum += best_p;
    r_sum += best_r;
    ++n;
  }
  return n ? std::make_pair(p_sum / n, r_sum / n) : std::make_pair(0.0, 0.0);
}

// Fault injection for the distributed tests: DETRAIN_FAULT_KILL="RANK:ITER" makes that rank
// kill itself (SIGKILL, no clean-up) when it reaches that iteration of this process.
std::pair<int64_t, int64_t> fault_kill_point() {
  const char* text = std::getenv("DETRAIN_FAULT_KILL");
  long long rank = -1, iter = -1;
  if (text && std::sscanf(text, "%lld:%lld", &rank, &iter) == 2) return {rank, iter};
  return {-1, -1};
}

std::vector<torch::Tensor> module_state(torch::nn::Module& m) {
  std::vector<torch::Tensor> out = m.parameters();
  for (const auto& b : m.buffers()) out.push_back(b);
  return out;
}

}  // namespace

// Everything built once per run.
struct Trainer {
  const TrainRequest& request;
  config::ResolvedConfig resolved;
  const config::Experiment& x;
  torch::Device device{torch::kCPU};
  Precision precision = Precision::kBf16;

  data::DatasetInfo dataset;
  data::Records train_records;
  model::YoloModel model{nullptr};
  std::unique_ptr<optim::ModelEma> ema;
  std::vector<model::ParamInfo> params;
  std::vector<torch::Tensor> trainable;
  std::unique_ptr<loss::Criterion> criterion;
  std::unique_ptr<optim::Optimizer> optimizer;
  std::unique_ptr<optim::TrainSchedule> schedule;
  std::unique_ptr<data::Loader> train_loader;
  std::unique_ptr<ValidationRun> validation;
  RunPaths paths;
  ArchIdentity arch;

  SchedulePosition position;
  double best_fitness = -std::numeric_limits<double>::infinity();
  int64_t best_epoch = -1;
  std::vector<std::vector<double>> history;  // results.csv rows so far
  TrainSummary summary;

  DistEnv dist_env;
  std::unique_ptr<Distributed> dist;         // null for a single process
  std::shared_ptr<const Replicas> replicas;  // sums over the ranks (sync BN, loss normalisers)
  std::pair<int64_t, int64_t> fault_kill{-1, -1};
  std::chrono::milliseconds dist_timeout{0};  // train.dist_timeout_s
  int64_t dist_bucket_bytes = 0;              // train.dist_bucket_mb
  bool main_rank() const { return !dist || dist->is_main(); }

  Trainer(const TrainRequest& r) : request(r), resolved(r.config), x(resolved.experiment) {}

  void setup();
  void resume_from(const std::string& where);
  // The state of `c` into the model, EMA, optimizer, generators and loop (resume, rollback).
  void restore_state(const Checkpoint& c, const std::string& source);
  // After a bad step or validation (`problem` set): back to `good_state` with half the
  // learning rate, or NumericError when train.max_bad_steps rollbacks are used up.
  void recover_from_divergence();
  Checkpoint make_checkpoint() const;
  void save(const std::string& path) const { save_checkpoint(path, make_checkpoint()); }
  // Runs the iterations of `position.epoch` from `position.iter_in_epoch`; false when the run
  // was stopped (request.stop or the testing hook) before the epoch ended.
  bool train_epoch(ProgressLine& progress, MetricsJsonl* jsonl);
  void validate_and_record(double epoch_seconds);
  void finish_epoch(double epoch_seconds);
  void advance_epoch();
  // Distributed runs: weights and EMA bit-identical on every rank (train.dist_verify).
  void verify_ranks_agree(int64_t epoch, int64_t iter);
  TrainSummary run();

  Stopwatch run_clock;  // since the start of this process's part of the run (ETA, summary)
  RunningLoss running;  // this epoch's loss means
  int64_t iterations_this_process = 0;
  std::unique_ptr<DivergencePolicy> divergence;
  std::optional<Checkpoint> good_state;  // taken at the start of each epoch
  std::string problem;                   // why the current epoch diverged; empty when it did not
  std::unique_ptr<ResultsCsv> results;
};

void Trainer::setup() {
  dist_env = read_dist_env();
  config::RuntimeOptions runtime_options = x.runtime;
  if (dist_env.distributed()) {
    if (dist_env.rank > 0) spdlog::set_level(spdlog::level::warn);  // one stream of logs
    // Ranks on one machine share its cores unless runtime.threads says otherwise.
    if (runtime_options.threads == 0)
      runtime_options.threads = std::max<int64_t>(
          1, static_cast<int64_t>(std::thread::hardware_concurrency()) / dist_env.local_world_size);
  }
  const RuntimeInfo runtime = apply_runtime(runtime_options);
  device = compat::parse_device(x.runtime.device);
  if (dist_env.distributed() && device.is_cuda())
    device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(dist_env.local_rank));
  precision = effective_precision(parse_precision(x.train.precision), device);
  spdlog::info("{}", runtime.summary());
  fault_kill = fault_kill_point();

  model::check_model(x.model);  // a bad model YAML fails before any data is read
  dataset = data::load_dataset(x.data.dataset, x.data.root);
  train_records = data::load_records(dataset, "train", data::RecordOptions::from(x.data, true));
  log_record_stats("train", train_records.stats);
  // The process group comes after the data scan, so no rank scans while others wait in a
  // collective.
  if (dist_env.distributed()) {
    if (x.data.batch % dist_env.world_size != 0)
      throw ConfigError(
          fmt::format("data.batch={} is the global batch and must divide evenly "
                      "over {} ranks; use a multiple of {}",
                      x.data.batch, dist_env.world_size, dist_env.world_size));
    dist_timeout = std::chrono::milliseconds(static_cast<int64_t>(x.train.dist_timeout_s * 1000));
    dist_bucket_bytes = static_cast<int64_t>(x.train.dist_bucket_mb * 1024 * 1024);
    dist = std::make_unique<Distributed>(dist_env, device, dist_timeout);
    replicas = std::make_shared<const Replicas>(dist->replicas());
    spdlog::info("distributed: rank {} of {} (local {} of {}, {}), store {}:{}", dist_env.rank,
                 dist_env.world_size, dist_env.local_rank, dist_env.local_world_size,
                 device.is_cuda() ? "nccl" : "gloo", dist_env.master_addr, dist_env.master_port);
  }
  std::optional<std::array<int64_t, 2>> kpt_shape;
  if (dataset.has_keypoints())
    kpt_shape = std::array<int64_t, 2>{dataset.kpt_count, dataset.kpt_dims};

  config::ModelOptions build = x.model;
  build.weights.clear();  // a checkpoint, a run directory or safetensors: loaded just below
  model = model::make_model(build, dataset.nc(), kpt_shape);
  if (!x.model.weights.empty())
    load_initial_weights(*model, arch_identity(*model), x.model.weights);
  if (model->head()->options().pose() && !dataset.has_keypoints())
    throw DataError(x.data.dataset + ": the data set has no kpt_shape but " + x.model.arch +
                    " is a pose model; add kpt_shape, flip_idx and oks_sigmas to the descriptor "
                    "or train a detection architecture");
  model->to(device);
  // Same seed, same init; the broadcast makes it so whatever a rank's RNG did.
  if (dist) dist->broadcast(module_state(*model), "initial weights");
  if (dist && x.train.sync_bn) model::set_sync_batch_norm(*model, replicas);
  arch = arch_identity(*model);
  auto ema_model = model::make_model(build, dataset.nc(), kpt_shape);
  ema_model->to(device);
  ema = std::make_unique<optim::ModelEma>(ema_model.ptr(), *model, optim::ema_options(x.train));

  params = model->param_infos();
  freeze_layers(params, x.train.freeze);
  for (const auto& info : params)
    if (info.trainable) trainable.push_back(info.param);

  criterion = loss::make_criterion(model->head()->options(), x.loss, dataset.oks_sigmas,
                                   model->head()->flow());
  if (replicas) criterion->set_replicas(*replicas);

  data::LoaderOptions train_opts =
      data::LoaderOptions::from(x.data, static_cast<uint64_t>(x.runtime.seed), /*train=*/true);
  train_opts.stride = static_cast<int>(model->max_stride());
  train_opts.pin_memory = device.is_cuda();
  if (dist) {
    train_opts.batch = x.data.batch / dist->world_size();  // this rank's share
    train_opts.rank = dist->rank();
    train_opts.world_size = dist->world_size();
  }
  train_loader =
      std::make_unique<data::Loader>(dataset, train_records.images, x.augment, train_opts);
  optim::ScheduleSettings settings = optim::schedule_settings(x);
  const int64_t nb = train_loader->batches_per_epoch();
  optim::OptimizerRun run;
  run.batch = x.data.batch;
  run.accumulate = optim::steady_accumulate(settings);
  run.nbs = x.train.nbs;
  run.nc = model->arch().nc;
  // The reference's auto rule counts ceil(images / max(batch, nbs)) iterations per epoch.
  const int64_t images = static_cast<int64_t>(train_records.images.size());
  run.total_iterations = (images + std::max(x.data.batch, x.train.nbs) - 1) /
                         std::max(x.data.batch, x.train.nbs) * x.train.epochs;
  const optim::OptimizerChoice choice =
      optim::choose_optimizer(x.optim, run.total_iterations, run.nc);
  if (choice.automatic) {
    settings.momentum = choice.momentum;
    settings.warmup_bias_lr = 0.0;
    spdlog::info("optimizer auto: {} (lr0 {}, momentum {})", choice.kind, choice.lr0,
                 choice.momentum);
  }
  optimizer = optim::build_optimizer(params, x.optim, run);
  std::vector<optim::GroupSchedule> groups;
  for (size_t g = 0; g < optimizer->num_groups(); ++g)
    groups.push_back(
        {optimizer->lr(g), optimizer->group_name(g).find("bias") != std::string::npos});
  schedule = std::make_unique<optim::TrainSchedule>(settings, nb, groups);
  position.batches_per_epoch = nb;

  // Rank 0 validates alone (the others wait for it in finish_epoch).
  if (main_rank())
    validation = std::make_unique<ValidationRun>(x, dataset, x.val.split, *model, device,
                                                 precision == Precision::kBf16);
}

Checkpoint Trainer::make_checkpoint() const {
  Checkpoint c;
  c.arch = arch;
  c.model = model::state_dict(*model);
  c.ema = ema->state();
  optim::OptimizerSnapshot snap = optimizer->snapshot();
  c.optimizer = {snap.kind, std::move(snap.tensors), std::move(snap.scalars)};
  c.position = position;
  c.position.ema_updates = ema->updates();
  c.generator_states = capture_torch_generators();
  c.loader_position = {{"epoch", position.epoch}, {"batch", position.iter_in_epoch}};
  c.config_yaml = config::dump_yaml(x, false);
  c.config_hash = resolved.hash;
  nlohmann::ordered_json h = history;
  c.metrics_json = h.dump();
  c.best_fitness = best_fitness;
  c.best_epoch = best_epoch;
  // Mid-accumulation gradients and the epoch's running loss: a resumed run continues the
  // very same sums.
  for (auto& [name, grad] : named_grads(params)) c.extra_tensors.emplace_back("grad/" + name, grad);
  if (running.sum.defined()) c.extra_tensors.emplace_back("running_loss", running.sum);
  c.extra_scalars["running_count"] = static_cast<double>(running.count);
  c.extra_scalars["world_size"] = static_cast<double>(dist ? dist->world_size() : 1);
  c.extra_scalars["lr_scale"] = divergence ? divergence->lr_scale() : 1.0;
  return c;
}

void Trainer::resume_from(const std::string& where) {
  const std::string path = fs::is_directory(where) ? run_paths(where).last_ckpt : where;
  const Checkpoint c = load_checkpoint(path);
  require_resumable(c, path);
  check_architecture(c, arch, path);
  const int64_t saved_world = static_cast<int64_t>(
      c.extra_scalars.count("world_size") ? c.extra_scalars.at("world_size") : 1);
  const int64_t world = dist ? dist->world_size() : 1;
  if (saved_world != world)
    throw ConfigError(fmt::format(
        "{}: written by a run of {} rank(s), resumed with {}; resume with --nproc {} (the world "
        "size sets each rank's batch and shard, so another one cannot continue it exactly)",
        path, saved_world, world, saved_world));
  if (c.position.finished)
    throw ConfigError(path +
                      ": this run already finished every epoch; nothing to resume "
                      "(train longer in a new run from its weights: model.weights=" +
                      path + " train.epochs=N)");
  if (c.config_hash != resolved.hash) {
    const config::ResolvedConfig saved = checkpoint_config(c.config_yaml, path, {});
    const auto changes = config::diff(saved.experiment, x);
    std::string listed;
    for (const auto& line : changes) listed += "\n  " + line;
    if (!request.force)
      throw ConfigError(path + ": the configuration differs from the checkpoint's (hash " +
                        c.config_hash + " vs " + resolved.hash +
                        "); resume with the same config, "
                        "or pass --force to accept:" +
                        listed);
    spdlog::warn("resuming with a different configuration (--force):{}", listed);
  }
  restore_state(c, path);
  if (position.batches_per_epoch != train_loader->batches_per_epoch())
    throw ConfigError(path + ": the checkpoint has " + std::to_string(position.batches_per_epoch) +
                      " batches per epoch but this data set and batch give " +
                      std::to_string(train_loader->batches_per_epoch()) +
                      "; resume with the same data and data.batch");
  best_fitness = c.best_fitness;
  best_epoch = c.best_epoch;
  // results.csv rows; JSON writes NaN (columns without a value) as null.
  if (!c.metrics_json.empty())
    for (const auto& row : nlohmann::json::parse(c.metrics_json)) {
      history.emplace_back();
      for (const auto& v : row)
        history.back().push_back(v.is_number() ? v.get<double>() : std::nan(""));
    }
  divergence = std::make_unique<DivergencePolicy>(
      x.train.max_bad_steps, position.bad_steps,
      c.extra_scalars.count("lr_scale") ? c.extra_scalars.at("lr_scale") : 1.0);
  if (main_rank()) tidy_for_resume(paths, c, x.train.best_half);
  spdlog::info("resumed {} at epoch {} iteration {} ({} optimizer steps)", path, position.epoch + 1,
               position.iter_in_epoch, position.optimizer_steps);
}

void Trainer::restore_state(const Checkpoint& c, const std::string& path) {
  std::map<std::string, torch::Tensor> model_state(c.model.begin(), c.model.end());
  model::load_state_dict(*model, model_state, path);
  ema->load_state(c.ema, c.position.ema_updates, path);
  optimizer->restore({c.optimizer.kind, c.optimizer.tensors, c.optimizer.scalars});
  restore_torch_generators(c.generator_states);
  position = c.position;
  for (const auto& info : params) {
    if (const torch::Tensor* g = find_tensor(c.extra_tensors, "grad/" + info.name))
      info.param.mutable_grad() = g->to(info.param.device()).clone();
  }
  running = RunningLoss{};
  if (const torch::Tensor* sum = find_tensor(c.extra_tensors, "running_loss"))
    running.sum = sum->clone();
  running.count = static_cast<int64_t>(
      c.extra_scalars.count("running_count") ? c.extra_scalars.at("running_count") : 0);
}

void Trainer::recover_from_divergence() {
  if (!divergence->try_rollback()) {
    DivergenceContext context;
    context.bf16 = precision == Precision::kBf16;
    context.clipping = x.train.clip_grad_norm > 0;
    context.save_period_key = "train.save_period_steps";
    if (fs::exists(paths.last_ckpt)) context.checkpoint = paths.last_ckpt;
    throw NumericError(diverged_message(problem, *divergence, context));
  }
  // The good state has no gradients of the bad step; a state without them starts clean.
  optimizer->zero_grad();
  restore_state(*good_state, "the in-memory state");
  position.bad_steps = divergence->rollbacks();
  spdlog::warn("{}",
               rollback_message(problem, *divergence, position.epoch, position.iter_in_epoch));
  problem.clear();
}

bool Trainer::train_epoch(ProgressLine& progress, MetricsJsonl* jsonl) {
  const int64_t epoch = position.epoch, epochs = x.train.epochs;
  const int64_t nb = position.batches_per_epoch;
  criterion->set_epoch(epoch, epochs);
  train_loader->set_mosaic(data::mosaic_active(epoch, epochs, x.augment.close_mosaic));
  if (main_rank()) report_mosaic(x, epoch);
  train_loader->start_epoch(epoch, position.iter_in_epoch);
  model->train();
  progress.header(criterion->names());

  Stopwatch epoch_clock;
  double wait_ms_total = 0;
  int64_t images_seen = 0;
  ProgressState state;
  state.epoch = epoch;
  state.epochs = epochs;
  state.total = nb;
  for (int64_t iter = position.iter_in_epoch; iter < nb; ++iter) {
    bool stop_requested = (request.stop && request.stop->load()) ||
                          (request.stop_after_iterations > 0 &&
                           iterations_this_process >= request.stop_after_iterations);
    if (dist) {
      dist->set_progress(epoch * nb + iter, fmt::format("epoch {} iteration {}", epoch + 1, iter));
      // Ranks stop together (a signal may reach them at different iterations).
      stop_requested = dist->any(stop_requested, "the stop check");
    }
    if (stop_requested) return false;
    if (dist && fault_kill.first == dist->rank() && fault_kill.second == iterations_this_process)
      std::raise(SIGKILL);

    Stopwatch step_clock;
    std::optional<data::Batch> batch = train_loader->next();
    if (!batch)
      throw DataError("the training loader ended after " + std::to_string(iter) + " of " +
                      std::to_string(nb) + " batches of epoch " + std::to_string(epoch + 1));
    wait_ms_total += batch->data_wait_ms;
    const int64_t ni = epoch * nb + iter;
    const optim::IterationHyper hyper = schedule->at(epoch, iter);
    for (size_t g = 0; g < optimizer->num_groups(); ++g) {
      optimizer->set_lr(g, hyper.lr[g] * divergence->lr_scale());
      optimizer->set_momentum(g, hyper.momentum);
    }
    // The first batches of a run (a run resumed past them already drew them).
    if (epoch == 0 && iter < x.train.plot_batches && x.train.plots && main_rank() &&
        iterations_this_process == iter)
      save_train_batch_plot(*batch, dataset,
                            paths.file("train_batch" + std::to_string(iter) + ".jpg"));

    const torch::Tensor images =  // [B, 3, H, W] float in [0, 1]
        batch->images.to(device, /*non_blocking=*/true).to(torch::kFloat).div_(255.0);
    model::TrainOutput out;
    {
      AutocastScope autocast(precision, device);
      out = model->forward_train(images);
    }
    const loss::LossResult l =
        (*criterion)(to_float(out), loss_targets(*batch, device), {images.size(2), images.size(3)});
    std::optional<std::string> bad = loss_problem(l.total.item<double>(), batch->cls.size(0));
    // Every rank rolls back when one diverged.
    if (dist && dist->any(bad.has_value(), "the loss check") && !bad) bad = "another rank's loss";
    if (bad) {
      problem = fmt::format("{} at epoch {} iteration {}", *bad, epoch + 1, iter);
      return false;
    }
    l.total.backward();

    if (optim::TrainSchedule::optimizer_step_due(ni, position.last_step_ni, hyper.accumulate)) {
      if (dist) dist->average_gradients(trainable, dist_bucket_bytes);
      const GradNorm gn = clip_grad_norm(trainable, x.train.clip_grad_norm);
      if (!gn.finite) {
        problem = fmt::format("non-finite gradients at epoch {} iteration {}", epoch + 1, iter);
        return false;
      }
      optimizer->step();
      ++position.optimizer_steps;
      // Local BatchNorm statistics differ per rank; rank 0's go to all so the EMA agrees.
      if (dist && !x.train.sync_bn) dist->broadcast(model->buffers(), "BatchNorm buffers");
      ema->update();
      if (dist && x.train.dist_verify) verify_ranks_agree(epoch, iter);
      optimizer->zero_grad();
      position.last_step_ni = ni;
    }
    running.add(l.items);
    compat::synchronize(device);

    const int64_t b = images.size(0);
    images_seen += b;
    position.iter_in_epoch = iter + 1;
    ++iterations_this_process;
    state.iter = iter + 1;
    state.losses = running.means(criterion->names());
    state.instances = batch->cls.size(0);
    state.imgsz = images.size(3);
    state.elapsed_s = epoch_clock.seconds();
    state.images_per_s = state.elapsed_s > 0 ? images_seen / state.elapsed_s : 0;
    state.data_wait_share = state.elapsed_s > 0 ? wait_ms_total / 1e3 / state.elapsed_s : 0;
    state.memory_gb = memory_gb(device);
    state.run_eta_s = run_clock.seconds() / iterations_this_process *
                      ((epochs - epoch) * nb - iter - 1);  // iterations left in the run
    progress.update(state);

    if (jsonl && x.train.log_every > 0 && (iter % x.train.log_every == 0 || iter + 1 == nb)) {
      StepRecord rec;
      rec.epoch = epoch;
      rec.iter = iter;
      rec.optimizer_steps = position.optimizer_steps;
      rec.losses = state.losses;
      for (size_t g = 0; g < optimizer->num_groups(); ++g) rec.lr.push_back(optimizer->lr(g));
      rec.instances = state.instances;
      rec.imgsz = state.imgsz;
      rec.images_per_s = state.images_per_s;
      rec.data_wait_ms = batch->data_wait_ms;
      rec.step_ms = step_clock.millis();
      rec.memory_gb = state.memory_gb;
      jsonl->append(rec);
    }
    if (main_rank() && x.train.save_period_steps > 0 && position.optimizer_steps > 0 &&
        position.last_step_ni == ni && position.optimizer_steps % x.train.save_period_steps == 0)
      save(paths.last_ckpt);
  }
  progress.finish(state);
  log_file_only(ProgressLine::header_text(criterion->names()) + "\n" +
                ProgressLine::line_text(state));
  return true;
}

void Trainer::verify_ranks_agree(int64_t epoch, int64_t iter) {
  std::vector<torch::Tensor> state = module_state(*model);
  for (const auto& t : module_state(ema->module())) state.push_back(t);
  const auto hashes = dist->all_gather(tensors_hash(state), "the weights check");
  for (size_t r = 1; r < hashes.size(); ++r)
    if (hashes[r] != hashes[0])
      throw DistributedError(fmt::format(
          "rank {}: after the optimizer step of epoch {} iteration {}, rank {}'s weights or EMA "
          "differ from rank 0's (train.dist_verify); this is a bug, please report it",
          dist->rank(), epoch + 1, iter, r));
}

void Trainer::advance_epoch() {
  position.epoch += 1;
  position.iter_in_epoch = 0;
  position.finished = position.epoch >= x.train.epochs;
  running = RunningLoss{};
}

// After each epoch: rank 0 validates, records and saves; the other ranks wait for that (through
// the store, up to train.dist_timeout_s) so none races ahead into a collective.
void Trainer::finish_epoch(double epoch_seconds) {
  const std::string key = "epoch_done/" + std::to_string(position.epoch);
  if (main_rank()) {
    validate_and_record(epoch_seconds);
    if (dist) dist->notify(key);
    return;
  }
  advance_epoch();
  dist->wait_for(key, dist_timeout);
}

void Trainer::validate_and_record(double epoch_seconds) {
  const int64_t epoch = position.epoch;
  std::vector<double> row;
  row.push_back(static_cast<double>(epoch + 1));
  row.push_back(epoch_seconds);
  for (const auto& [name, value] : running.means(criterion->names())) row.push_back(value);

  const bool last_epoch = epoch + 1 == x.train.epochs;
  std::optional<eval::ValidationResult> v;
  if (x.train.val || last_epoch) {
    ValidationProgress val_progress(x, validation->images());
    std::optional<ValPlots> plots;
    if (x.train.plots)
      plots.emplace(dataset, validation->records(), paths.dir, x.train.plot_batches);
    auto observer = [&](int64_t index, const eval::ValBatch& b,
                        const std::vector<eval::ImageDetections>& dets) {
      val_progress.add(static_cast<int64_t>(b.frames.size()));
      if (plots) plots->add(index, b, dets);
    };
    // Rank 0 validates alone: its validation losses use local normalisers, not a collective.
    criterion->set_replicas({});
    v = validation->run(dynamic_cast<model::YoloModelImpl&>(ema->module()), observer,
                        criterion.get());
    if (replicas) criterion->set_replicas(*replicas);
    if (!dist && !validation_finite(*v)) {  // other ranks cannot roll back with rank 0 alone
      problem = fmt::format("non-finite validation loss or fitness after epoch {}", epoch + 1);
      return;
    }
    show(eval::stats_table(*v));
    if (plots) plots->save();
    if (x.val.save_json) eval::write_predictions_json(paths.file("predictions.json"), v->records);
  }
  auto add_metrics = [&](const eval::CocoEvalResult* r) {
    if (!r) {
      for (int i = 0; i < 4; ++i) row.push_back(std::nan(""));
      return;
    }
    const auto [p, rc] = precision_recall(*r);
    row.insert(row.end(), {p, rc, r->stats[1], r->stats[0]});
  };
  add_metrics(v ? &v->box : nullptr);
  if (model->head()->options().pose()) add_metrics(v && v->keypoints ? &*v->keypoints : nullptr);
  for (size_t i = 0; i < criterion->names().size(); ++i)
    row.push_back(v && i < v->losses.size() ? v->losses[i] : std::nan(""));
  for (size_t g = 0; g < optimizer->num_groups(); ++g) row.push_back(optimizer->lr(g));
  results->append(row);
  history.push_back(row);
  if (x.train.plots) save_results_png(results->table(), paths.results_png);

  const double fitness = v ? v->fitness() : -std::numeric_limits<double>::infinity();
  if (v) {
    summary.box_stats = v->box.stats;
    summary.keypoint_stats = v->keypoints ? v->keypoints->stats : std::vector<double>{};
  }
  const bool improved = v && fitness > best_fitness;
  if (improved) {
    best_fitness = fitness;
    best_epoch = epoch;
  }
  advance_epoch();  // the checkpoint describes the state after this epoch
  save(paths.last_ckpt);
  if (improved) publish_best(paths, make_checkpoint(), x.train.best_half);
}

TrainSummary Trainer::run() {
  start_log_capture();  // train.log also gets what setup says before the run directory exists
  setup();
  const bool resuming = !request.resume.empty();
  if (resuming) {
    const std::string dir = fs::is_directory(request.resume)
                                ? request.resume
                                : fs::path(request.resume).parent_path().parent_path().string();
    paths = run_paths(dir);
    resume_from(request.resume);
  } else if (main_rank()) {
    paths = create_run_dir(x.train.project, x.train.name, x.train.exist_ok);
  }
  // Only rank 0 writes the run directory; the others learn its name for their messages.
  if (dist) paths.dir = dist->from_main("run_dir", paths.dir);
  std::unique_ptr<MetricsJsonl> jsonl;
  if (main_rank()) {
    add_log_file(paths.train_log);
    config::save_args_yaml(resolved, paths.args_yaml);
    if (request.print_config)
      report_start(resolved, spdlog::default_logger()->should_log(spdlog::level::debug));
    spdlog::info("run directory {}", paths.dir);
    if (resuming)
      truncate_metrics_jsonl(paths.metrics_jsonl, position.epoch, position.iter_in_epoch);
    jsonl = std::make_unique<MetricsJsonl>(paths.metrics_jsonl);
    if (x.train.plots && !resuming)
      save_labels_plot(train_records.images, dataset.names, paths.file("labels.jpg"));
    const auto columns = results_columns(criterion->names(), model->head()->options().pose(),
                                         static_cast<int>(optimizer->num_groups()));
    results = std::make_unique<ResultsCsv>(
        resuming ? ResultsCsv::resume(paths.results_csv, columns, position.epoch)
                 : ResultsCsv(paths.results_csv, columns));
  }
  if (!divergence) divergence = std::make_unique<DivergencePolicy>(x.train.max_bad_steps);
  ProgressLine progress(
      main_rank() ? parse_progress_mode(x.train.progress, "train.progress") : ProgressMode::kOff,
      std::cout, stdout_is_tty(), x.train.progress_interval_s);

  summary.run_dir = paths.dir;
  summary.main_rank = main_rank();
  while (position.epoch < x.train.epochs) {
    if (position.iter_in_epoch == 0 || !good_state) good_state = deep_copy(make_checkpoint());
    Stopwatch epoch_clock;
    const bool completed = train_epoch(progress, jsonl.get());
    if (!problem.empty()) {
      recover_from_divergence();
      continue;
    }
    if (!completed) {
      // Mid-accumulation gradients differ per rank; their mean continues the same sums.
      if (dist) dist->average_gradients(trainable, dist_bucket_bytes);
      if (main_rank()) save(paths.last_ckpt);
      if (dist) dist->barrier("the stop checkpoint");
      summary.interrupted = true;
      spdlog::warn("stopped at epoch {} iteration {}; resume with: detrain train --resume {}",
                   position.epoch + 1, position.iter_in_epoch, paths.dir);
      break;
    }
    finish_epoch(epoch_clock.seconds());
    if (!problem.empty()) recover_from_divergence();
  }
  // Rank 0 hosts the store: nobody leaves while another may still reach it.
  if (dist) dist->barrier("the end of training");
  if (main_rank()) log_skipped_images(train_records.stats, train_loader->stats());
  summary.epochs_completed = position.epoch;
  summary.optimizer_steps = position.optimizer_steps;
  summary.best_fitness = best_fitness;
  summary.best_epoch = best_epoch;
  summary.total_s = run_clock.seconds();
  if (main_rank() && !summary.interrupted) show(final_summary(summary));
  return summary;
}

TrainSummary run_training(const TrainRequest& request) {
  Trainer trainer(request);
  return trainer.run();
}

}  // namespace detrain::train
