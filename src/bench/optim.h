// `detrain bench optim`: optimizer step time on a real parameter set with fixed random
// gradients, for SGD, MuSGD `off` (per-parameter Newton-Schulz) and MuSGD `exact` (stacked
// buckets) stepped side by side (bench/abba.h), with the Newton-Schulz kernel that ran, the
// ATen operator calls per step and the max |param difference| exact vs off. Several kernels
// give one `exact` row each, interleaved with the others (an A/B in one process).
#pragma once

#include <string>
#include <vector>

#include "bench/report.h"
#include "config/config.h"

namespace detrain::bench {

struct OptimBenchOptions {
  std::string arch, scale, device;  // "" = the config's model.arch, model.scale, runtime.device
  int steps = 50;                   // timed steps per optimizer
  int warmup = 2;                   // steps not kept (state and workspaces are allocated there)
  // optim.ns_kernel values for the `exact` rows (`off` takes the first); empty: the config's.
  std::vector<std::string> ns_kernels;
};

Report bench_optim(const config::ResolvedConfig& resolved, const OptimBenchOptions& options);

}  // namespace detrain::bench
