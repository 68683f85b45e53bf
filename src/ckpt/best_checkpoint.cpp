// See best_checkpoint.h.
#include "ckpt/best_checkpoint.h"

namespace detrain::ckpt {

Checkpoint shippable_checkpoint(const Checkpoint& full, bool half) {
  Checkpoint c;
  c.arch = full.arch;
  // The EMA is what validation measured; a run without one ships its raw model.
  for (const auto& [name, t] : full.ema.empty() ? full.model : full.ema)
    c.ema.emplace_back(name, half && t.is_floating_point() ? t.to(torch::kHalf) : t);
  c.position = full.position;
  c.config_yaml = full.config_yaml;
  c.config_hash = full.config_hash;
  c.metrics_json = full.metrics_json;
  c.best_fitness = full.best_fitness;
  c.best_epoch = full.best_epoch;
  return c;
}

}  // namespace detrain::ckpt
