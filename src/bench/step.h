// `detrain bench step`: the training step interval with the real loader, measured by running
// the trainer itself (no separate benchmark loop that could drift from it) for warmup + steps
// iterations per precision and rank count, and reading its per-iteration metrics.jsonl lines;
// the first `warmup` iterations are excluded. Reports median and range per run (with the
// precision it runs as: bf16 falls back to fp32 on x86 CPUs without AVX2), data-wait share and
// images per second. One rank trains in this process; N > 1 ranks run `detrain train --nproc N`
// as a child process (the launcher needs a process of its own).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/report.h"

namespace detrain::bench {

struct StepBenchOptions {
  // The experiment as the command line gave it: the child processes get the same.
  std::string config_file;
  std::vector<std::string> overrides;
  std::string arch, scale, data, device;  // "" = the config's
  int64_t imgsz = 640, batch = 4, steps = 20, warmup = 3;
  std::vector<std::string> precisions = {"fp32", "bf16"};
  std::vector<int64_t> nprocs = {1};  // data.batch = batch is the global batch
};

Report bench_step(const StepBenchOptions& options);

}  // namespace detrain::bench
