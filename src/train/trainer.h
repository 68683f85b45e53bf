// The training loop (`detrain train`): one explicit loop over epochs and iterations that wires
// the resolved config, the model and its EMA, the loader, the criterion, the optimizer and
// its schedule, validation with the COCO evaluator, logs, plots and atomic checkpoints. No hook
// framework: what happens in a step is read top to bottom in trainer.cpp. Differences from the
// reference: BF16 autocast instead of FP16 + GradScaler, a checkpoint holds the raw model as
// well as the EMA and resumes mid-epoch bit-exactly, and per-epoch metrics are COCO's.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "config/config.h"

namespace detrain::train {

// Where the loop stands before an iteration (what callbacks see).
struct IterationInfo {
  int64_t rank = 0;
  int64_t epoch = 0;                    // 0-based
  int64_t iter = 0;                     // 0-based, in the epoch
  int64_t iterations_this_process = 0;  // iterations this process has run so far
};

// Hooks into the loop for the command line (--max-iterations) and for tests (faults, early
// stops), so the loop reads no environment variables.
struct TrainCallbacks {
  // True stops the run before this iteration with a resumable checkpoint, as a signal would.
  std::function<bool(const IterationInfo&)> should_stop;
  // Runs before each iteration, after the ranks agreed to go on (fault injection).
  std::function<void(const IterationInfo&)> before_iteration;
};

struct TrainRequest {
  config::ResolvedConfig config;
  std::string resume;  // a run directory or a checkpoint file; empty starts a fresh run
  bool force = false;  // resume although the config hash differs (the diff is listed)
  // Set (e.g. by SIGINT) to stop after the current iteration with a resumable checkpoint.
  const std::atomic<bool>* stop = nullptr;
  // Set (by train.requeue_signal) to stop the same way for a requeue (TrainSummary::requeued).
  const std::atomic<bool>* requeue = nullptr;
  TrainCallbacks callbacks;
  bool print_config = true;  // the resolved-config table on stdout at start
};

struct TrainSummary {
  std::string run_dir;
  int64_t epochs_completed = 0;
  int64_t optimizer_steps = 0;
  bool interrupted = false;  // stopped early with a resumable checkpoint
  bool requeued = false;     // ... because of train.requeue_signal
  // Why a finished run ended before its epochs (train.patience, train.time); empty otherwise.
  std::string stop_reason;
  bool main_rank = true;  // false on ranks > 0 of a distributed run (they report nothing)
  double best_fitness = 0;
  int64_t best_epoch = -1;             // 0-based
  double total_s = 0;                  // wall time of this process's part of the run
  std::vector<double> box_stats;       // last validation's 12 COCO bbox stats (empty: none)
  std::vector<double> keypoint_stats;  // last validation's 10 keypoint stats (pose)
};

// Runs (or resumes) a training run. Errors are the typed exceptions of common/errors.h;
// a run still diverging after train.max_bad_steps rollbacks (divergence.h) throws NumericError.
TrainSummary run_training(const TrainRequest& request);

// A should_stop that stops after `iterations` iterations of this process (--max-iterations).
inline std::function<bool(const IterationInfo&)> stop_after(int64_t iterations) {
  if (iterations <= 0) return {};
  return [iterations](const IterationInfo& i) { return i.iterations_this_process >= iterations; };
}

}  // namespace detrain::train
