// The training loop (`detrain train`): one explicit loop over epochs and iterations that wires
// the resolved config, the model and its EMA, the loader, the criterion, the optimizer and
// its schedule, validation with the COCO evaluator, logs, plots and atomic checkpoints. No hook
// framework: what happens in a step is read top to bottom in trainer.cpp. Differences from the
// reference: BF16 autocast instead of FP16 + GradScaler, a checkpoint holds the raw model as
// well as the EMA and resumes mid-epoch bit-exactly, and per-epoch metrics are COCO's.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "config/config.h"

namespace detrain::train {

struct TrainRequest {
  config::ResolvedConfig config;
  std::string resume;  // a run directory or a checkpoint file; empty starts a fresh run
  bool force = false;  // resume although the config hash differs (the diff is listed)
  // Set (e.g. by SIGINT) to stop after the current iteration with a resumable checkpoint.
  const std::atomic<bool>* stop = nullptr;
  // Testing hook: stop after this many iterations of this process (0: never), as if `stop`
  // had been set; the checkpoint written is the same.
  int64_t stop_after_iterations = 0;
  bool print_config = true;  // the resolved-config table on stdout at start
};

struct TrainSummary {
  std::string run_dir;
  int64_t epochs_completed = 0;
  int64_t optimizer_steps = 0;
  bool interrupted = false;  // stopped early with a resumable checkpoint
  bool main_rank = true;     // false on ranks > 0 of a distributed run (they report nothing)
  double best_fitness = 0;
  int64_t best_epoch = -1;             // 0-based
  double total_s = 0;                  // wall time of this process's part of the run
  std::vector<double> box_stats;       // last validation's 12 COCO bbox stats (empty: none)
  std::vector<double> keypoint_stats;  // last validation's 10 keypoint stats (pose)
};

// Runs (or resumes) a training run. Errors are the typed exceptions of common/errors.h;
// a run still diverging after train.max_bad_steps rollbacks (divergence.h) throws NumericError.
TrainSummary run_training(const TrainRequest& request);

}  // namespace detrain::train
