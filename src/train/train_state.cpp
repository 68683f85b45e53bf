// See train_state.h.
#include "train/train_state.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "model/state_dict.h"

namespace detrain::train {

namespace {

// The loop's extras in Checkpoint::extra_tensors / extra_scalars and loader_position.
constexpr const char* kGradPrefix = "grad/";
constexpr const char* kRunningLoss = "running_loss";
constexpr const char* kRunningCount = "running_count";
constexpr const char* kWorldSize = "world_size";
constexpr const char* kLrScale = "lr_scale";
constexpr const char* kStopperBestFitness = "stopper_best_fitness";
constexpr const char* kStopperBestEpoch = "stopper_best_epoch";
constexpr const char* kEpochs = "epochs";
constexpr const char* kTrainSeconds = "train_seconds";

const torch::Tensor* find_tensor(const ckpt::NamedTensors& tensors, const std::string& name) {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

double scalar_or(const std::map<std::string, double>& scalars, const char* key, double fallback) {
  const auto it = scalars.find(key);
  return it == scalars.end() ? fallback : it->second;
}

}  // namespace

void RunningLoss::add(const torch::Tensor& items) {
  const torch::Tensor d = items.detach().to(torch::kCPU, torch::kDouble);
  sum = sum.defined() ? sum + d : d;
  ++count;
}

std::vector<std::pair<std::string, double>> RunningLoss::means(
    const std::vector<std::string>& names) const {
  std::vector<std::pair<std::string, double>> out;
  for (size_t i = 0; i < names.size(); ++i)
    out.emplace_back(names[i], count ? sum[static_cast<int64_t>(i)].item<double>() / count : 0.0);
  return out;
}

void TrainState::summarize(TrainSummary& summary) const {
  summary.epochs_completed = position.epoch;
  summary.optimizer_steps = position.optimizer_steps;
  summary.best_fitness = best_fitness;
  summary.best_epoch = best_epoch;
}

void TrainState::advance_epoch(bool stop) {
  position.epoch += 1;
  position.iter_in_epoch = 0;
  position.finished = stop || position.epoch >= epochs;
  running = RunningLoss{};
}

ckpt::Checkpoint capture_checkpoint(const TrainState& state, const TrainParts& parts,
                                    const config::ResolvedConfig& resolved) {
  ckpt::Checkpoint c;
  c.arch = parts.arch;
  c.model = model::state_dict(*parts.model);
  c.ema = parts.ema->state();
  c.optimizer = parts.optimizer->snapshot();
  c.position = state.position;
  c.position.ema_updates = parts.ema->updates();
  c.generator_states = ckpt::capture_torch_generators();
  c.loader_position = {{"epoch", state.position.epoch}, {"batch", state.position.iter_in_epoch}};
  c.config_yaml = config::dump_yaml(resolved.experiment, false);
  c.config_hash = resolved.hash;
  nlohmann::ordered_json h = state.history;
  c.metrics_json = h.dump();
  c.best_fitness = state.best_fitness;
  c.best_epoch = state.best_epoch;
  // Mid-accumulation gradients and the epoch's running loss: a resumed run continues the
  // very same sums.
  for (const auto& info : parts.params)
    if (info.param.grad().defined())
      c.extra_tensors.emplace_back(kGradPrefix + info.name, info.param.grad().clone());
  if (state.running.sum.defined()) c.extra_tensors.emplace_back(kRunningLoss, state.running.sum);
  c.extra_scalars[kRunningCount] = static_cast<double>(state.running.count);
  c.extra_scalars[kWorldSize] = static_cast<double>(state.world_size);
  c.extra_scalars[kLrScale] = state.lr_scale;
  c.extra_scalars[kStopperBestFitness] = state.stopper.best_fitness;
  c.extra_scalars[kStopperBestEpoch] = static_cast<double>(state.stopper.best_epoch);
  c.extra_scalars[kEpochs] = static_cast<double>(state.epochs);
  c.extra_scalars[kTrainSeconds] = state.train_seconds;
  return c;
}

TrainState state_of(const ckpt::Checkpoint& c) {
  TrainState s;
  s.position = c.position;
  if (const torch::Tensor* sum = find_tensor(c.extra_tensors, kRunningLoss))
    s.running.sum = sum->clone();
  s.running.count = static_cast<int64_t>(scalar_or(c.extra_scalars, kRunningCount, 0));
  // results.csv rows; JSON writes NaN (columns without a value) as null.
  if (!c.metrics_json.empty())
    for (const auto& row : nlohmann::json::parse(c.metrics_json)) {
      s.history.emplace_back();
      for (const auto& v : row)
        s.history.back().push_back(v.is_number() ? v.get<double>() : std::nan(""));
    }
  s.best_fitness = c.best_fitness;
  s.best_epoch = c.best_epoch;
  s.lr_scale = scalar_or(c.extra_scalars, kLrScale, 1.0);
  s.world_size = static_cast<int64_t>(scalar_or(c.extra_scalars, kWorldSize, 1));
  s.stopper.best_fitness = scalar_or(c.extra_scalars, kStopperBestFitness, 0.0);
  s.stopper.best_epoch = static_cast<int64_t>(scalar_or(c.extra_scalars, kStopperBestEpoch, 0));
  s.epochs = static_cast<int64_t>(scalar_or(c.extra_scalars, kEpochs, 0));
  s.train_seconds = scalar_or(c.extra_scalars, kTrainSeconds, 0.0);
  return s;
}

void restore_parts(TrainParts& parts, const ckpt::Checkpoint& c, const std::string& source) {
  std::map<std::string, torch::Tensor> model_state(c.model.begin(), c.model.end());
  model::load_state_dict(*parts.model, model_state, source);
  parts.ema->load_state(c.ema, c.position.ema_updates, source);
  parts.optimizer->restore(c.optimizer);
  ckpt::restore_torch_generators(c.generator_states);
  for (const auto& info : parts.params) {
    // Laid out as the parameter (runtime.memory_format), as autograd lays out its gradients, so
    // the resumed accumulation and step run the same kernels as the uninterrupted ones.
    if (const torch::Tensor* g = find_tensor(c.extra_tensors, kGradPrefix + info.name))
      info.param.mutable_grad() = torch::empty_like(info.param).copy_(*g);
  }
}

void rewind(TrainParts& parts, TrainState& state, const ckpt::Checkpoint& good) {
  restore_parts(parts, good, "the in-memory state");
  const TrainState then = state_of(good);
  state.position = then.position;
  state.running = then.running;
}

}  // namespace detrain::train
