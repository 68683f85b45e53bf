// `runtime.*`: device, threads and seed, applied once at start (src/compat/runtime).
#pragma once

#include "config/field.h"

namespace detrain::config {

struct RuntimeOptions {
  std::string device = "cpu";
  int64_t threads = 0;
  int64_t seed = 0;
  bool deterministic = true;
  bool cudnn_benchmark = false;

  template <class V>
  void visit(V& v) {
    v("device", device, "cpu, cuda or cuda:N");
    v("threads", threads, "intra-op CPU threads; 0 uses every core", Constraint::range(0, 1024));
    v("seed", seed, "global seed (model init, shuffling, augmentation)",
      Constraint::range(0, 9.007199254740992e15));
    v("deterministic", deterministic, "prefer deterministic kernels");
    v("cudnn_benchmark", cudnn_benchmark, "let cuDNN autotune convolution algorithms");
  }
};

}  // namespace detrain::config
