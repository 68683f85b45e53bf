// What the per-model benches (model, loss) measure: the config's network or another
// architecture, at a square input size and batch, timed over repeats after a warm-up.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"

namespace detrain::bench {

struct ModelCase {
  std::string arch;  // "" = model.arch of the config
  int64_t imgsz = 640;
  int64_t batch = 1;
  int repeats = 5;
};

// The config's model options with the case's architecture.
inline config::ModelOptions model_options_of(const config::ResolvedConfig& resolved,
                                             const ModelCase& c) {
  auto options = resolved.experiment.model;
  if (!c.arch.empty()) options.arch = c.arch;
  return options;
}

}  // namespace detrain::bench
