// The figures `bench optim` prints beside its step times, each measured or counted in the same
// run: ATen operator calls of one call, the Newton-Schulz arithmetic of a MuSGD step, this
// machine's practical fp32 matrix-multiply rate and the load average.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "optim/musgd.h"

namespace detrain::bench {

// ATen operator calls (nested ones included, on any thread) made while `run` runs.
int64_t count_op_calls(const std::function<void()>& run);

// Newton-Schulz GFLOP of one MuSGD step over `keys`.
double newton_schulz_gflop(const std::vector<optim::MatrixKey>& keys);

// The best of 5 1024^3 sgemms (at::mm_out) after one warm-up, in GFLOP/s, at the current
// LibTorch thread count.
double sgemm_peak_gflops();

// The 1-minute load average (other processes share the cores), or -1 where /proc has none.
double load_average();

}  // namespace detrain::bench
