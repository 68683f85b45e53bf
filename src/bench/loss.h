// `detrain bench loss`: how long label assignment and the training criterion take for a
// model's head at a given size, batch and object count (synthetic raw outputs, random boxes),
// and the process's peak memory after each stage.
#pragma once

#include "bench/model_case.h"
#include "bench/report.h"

namespace detrain::bench {

struct LossBenchOptions {
  ModelCase model = {"", 640, 2, 5};
  int64_t boxes = 100;  // objects per image
};

Report bench_loss(const config::ResolvedConfig& resolved, const LossBenchOptions& options);

}  // namespace detrain::bench
