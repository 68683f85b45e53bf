// Exponential moving average of a model's weights and buffers (the reference's ModelEMA): after
// every optimizer step u += 1, d = decay * (1 - exp(-u / tau)) and every floating state entry
// (parameters and BatchNorm running statistics) moves e <- d * e + (1 - d) * m. Differences:
// the EMA lives in a second instance of the architecture that the caller builds (C++ modules
// cannot be deep-copied generically), and integer buffers (num_batches_tracked) are copied
// instead of frozen at their initial value.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "config/train_options.h"

namespace detrain::optim {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

struct EmaOptions {
  double decay = 0.9999;  // train.ema_decay
  double tau = 2000.0;    // train.ema_tau: ramp length in updates
};

inline EmaOptions ema_options(const config::TrainOptions& train) {
  return {train.ema_decay, train.ema_tau};
}

class ModelEma {
 public:
  // Binds `ema_model` (a second instance of `model`'s architecture, same parameter and buffer
  // names and shapes) to `model`: copies model's state into it as fp32 on model's device, turns
  // its gradients off and puts it in eval mode. Throws ModelError when the two differ.
  ModelEma(std::shared_ptr<torch::nn::Module> ema_model, const torch::nn::Module& model,
           EmaOptions options = {});

  // One EMA update from the bound model's current state (call after each optimizer step).
  void update();

  // d(u) = decay * (1 - exp(-u / tau)).
  double decay_at(int64_t updates) const;
  int64_t updates() const { return updates_; }

  // The averaged model, in eval mode, for validation and checkpoints.
  torch::nn::Module& module() { return *ema_model_; }
  const std::shared_ptr<torch::nn::Module>& module_ptr() const { return ema_model_; }

  // Every parameter and buffer of the EMA model by name (the tensors themselves, not copies).
  NamedTensors state() const;
  // Restores a state saved by state() plus the update counter. Strict: every name must be
  // present with the same shape; throws ModelError naming `source` and the offending names.
  void load_state(const NamedTensors& state, int64_t updates, const std::string& source);

 private:
  struct Entry {
    std::string name;
    torch::Tensor ema;    // [...] fp32 (or the buffer's own dtype when not floating)
    torch::Tensor model;  // [...] same shape, the bound model's tensor
  };

  std::shared_ptr<torch::nn::Module> ema_model_;
  EmaOptions options_;
  int64_t updates_ = 0;
  std::vector<Entry> floating_;  // averaged
  std::vector<Entry> integral_;  // copied
};

}  // namespace detrain::optim
