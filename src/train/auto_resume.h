// train.resume=auto: which run a training command continues on its own, so that a job
// restarted by torchrun (--max-restarts) or requeued by Slurm picks up where its previous
// attempt stopped instead of training from epoch 1 in a new runs/train2. The newest run
// directory of <project>/<name> is the candidate (the one the previous attempt created); its
// weights/last.ckpt, else its newest weights/epochN.ckpt, is continued when it loads and
// verifies (checkpoints are written atomically, so a killed write leaves the previous file; a
// damaged one is skipped and named).
#pragma once

#include <string>

#include "config/config.h"

namespace detrain::train {

// Whether this run looks for a run to continue: train.resume=auto, or the default "restarts"
// when `restarted` (TORCHELASTIC_RESTART_COUNT or SLURM_RESTART_COUNT > 0).
bool auto_resume_enabled(const std::string& mode, bool restarted);

struct AutoResumeChoice {
  std::string run_dir;     // the run directory to use; empty: create a new one as usual
  std::string checkpoint;  // the checkpoint to continue from; empty: train from the start
};

// Rank 0, before the run directory exists: what train.resume=auto continues, with one log line
// saying what it found. A run that finished every epoch, or whose checkpoints are all damaged,
// is left alone (a new run directory); under a restart, a directory without any checkpoint is
// the previous attempt's (it died before its first save) and is trained in afresh.
AutoResumeChoice find_auto_resume(const config::TrainOptions& train, bool restarted);

}  // namespace detrain::train
