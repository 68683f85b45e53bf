// Preemption on Slurm: the requeue signal of train.requeue_signal (Slurm's
// `--signal=USR1@90` sends it 90 s before the time limit) and the requeue itself, which rank 0
// asks for after every rank stopped and the checkpoint is on disk.
#pragma once

#include <string>

#include "common/errors.h"

namespace detrain::dist {

// The exit code of a run stopped by train.requeue_signal (a resumable checkpoint was written and,
// under Slurm, the job requeued): ExitCode::kRequeued, 75.
constexpr int kRequeuedExitCode = static_cast<int>(ExitCode::kRequeued);

// The signal number of a train.requeue_signal value ("SIGUSR1", "SIGUSR2"); 0 for "none".
int requeue_signal_number(const std::string& name);

// Runs `scontrol requeue JOB_ID` (scontrol from PATH) and waits for it: Slurm puts the job back
// in the queue, and its next start continues the run (SLURM_RESTART_COUNT > 0 turns on
// train.resume). Returns "" on success, else what went wrong, for the log.
std::string requeue_slurm_job(const std::string& job_id);

}  // namespace detrain::dist
