// `detrain bench step`: the training step interval with the real loader, measured by running
// the trainer itself (no separate benchmark loop that could drift from it) for warmup + steps
// iterations per precision and rank count, and reading its per-iteration metrics.jsonl lines;
// the first `warmup` iterations are excluded. Reports median and range per run (with the
// precision it runs as: bf16 falls back to fp32 on x86 CPUs without AVX2, and the memory format
// it ran in: runtime.memory_format=auto resolved), the training thread's median CPU time per
// iteration (one rank; all of a step's LibTorch work with runtime.threads=1), data-wait share
// and images per second; with `profile` N, the N operators with the most self time per step
// of the timed iterations (bench/op_profile.h; one-rank rows). One rank
// trains in this process; N > 1 ranks run `detrain train --nproc N` as a child process (the
// launcher needs a process of its own).
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
  // runtime.memory_format values (auto, nchw, nhwc), one run each; "" = the config's.
  std::vector<std::string> memory_formats = {""};
  std::vector<int64_t> nprocs = {1};  // data.batch = batch is the global batch
  int64_t profile = 0;                // operators listed per one-rank row; 0: no profile
};

Report bench_step(const StepBenchOptions& options);

}  // namespace detrain::bench
