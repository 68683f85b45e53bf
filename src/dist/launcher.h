// `detrain train --nproc N`: the local launcher. Starts N copies of this executable with the
// launch environment torchrun would set (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT), forwards Ctrl-C / SIGTERM (as SIGINT) and the requeue signals
// SIGUSR1 / SIGUSR2 (as themselves) to them, and fails fast: when one rank
// exits with an error, the others are told to stop (SIGTERM, then SIGKILL after a grace
// period) and the launcher exits with the failed rank's code. Multi-node runs use the same
// binary under torchrun/Slurm variables instead (see read_dist_env).
#pragma once

#include <atomic>
#include <string>
#include <vector>

namespace detrain::dist {

struct LaunchOptions {
  int nproc = 1;
  std::vector<std::string> argv;  // the ranks' command line (argv[0] is ignored: this binary)
  int master_port = 0;            // 0: MASTER_PORT if set, else a free loopback port
  double grace_s = 10.0;          // after a failure, SIGKILL ranks still running after this
  const std::atomic<bool>* interrupt = nullptr;  // set by the caller's signal handler
  // A signal the caller's handler caught for the ranks (SIGUSR1 / SIGUSR2: train.requeue_signal),
  // sent on to every running rank and reset to 0; 0 when none is pending.
  std::atomic<int>* forward = nullptr;
};

// Runs the ranks to completion; returns the exit code to use (0 when all succeeded).
int launch_local_ranks(const LaunchOptions& options);

}  // namespace detrain::dist
