// `detrain bench model`: how long building a network and running it take (build, training
// forward, forward + backward, inference, fused inference) at a given size and batch.
#pragma once

#include "bench/model_case.h"
#include "bench/report.h"

namespace detrain::bench {

struct ModelBenchOptions {
  ModelCase model = {"", 256, 1, 5};
};

Report bench_model(const config::ResolvedConfig& resolved, const ModelBenchOptions& options);

}  // namespace detrain::bench
