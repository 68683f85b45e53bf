// How busy the machine is when a command starts: the runnable threads of other processes,
// sampled from /proc/stat's procs_running. Two start-time choices read it: OpenMP's wait policy
// (openmp_wait.h: spinning pays on idle cores and costs multiples on busy ones) and
// train.precision=auto (BF16 autocast was measured slower than fp32 beside other work).
// The front end samples once and hands the figure to the processes it execs (and those to
// their ranks) through DETRAIN_MACHINE_LOAD, so one run makes one decision.
#pragma once

#include <optional>
#include <string>

namespace detrain {

struct MachineLoad {
  double other_runnable = 0;  // mean runnable threads besides the sampling one
  int online_cpus = 1;        // the machine's CPUs (procs_running counts all of them)
};

// `samples` readings of procs_running, `interval_ms` apart; nullopt where /proc/stat is
// unreadable (not Linux). `exclude_own`: also count this process's runnable threads at each
// reading (/proc/self/task) and leave them out, so a running process (its loader workers, its
// OpenMP threads still spinning) measures the others only.
std::optional<MachineLoad> sample_machine_load(int samples = 10, int interval_ms = 10,
                                               bool exclude_own = false);

// True when the idle CPUs cannot hold `threads` busy threads of ours: fewer than threads - 0.5
// of them (half a thread of slack absorbs a sampling daemon's blips).
bool machine_is_busy(const MachineLoad& load, int threads);

// The intra-op threads a run of `threads` takes at this load: all of them on idle cores, else as
// many as the idle CPUs hold (rounded), at least one. Beside a 2-thread PyTorch process on 2
// cores, one thread took 0.5-0.65x the step of two (docs/perf/2026-12-08-busy-cores.md).
int threads_idle_cpus_hold(const MachineLoad& load, int threads);

// threads_idle_cpus_hold at the load this run started with (startup_machine_load); `threads`
// where that load is unknown. The trainer takes it with runtime.threads=0; bench step reports it.
int threads_at_startup_load(int threads);

// "1.9 other runnable threads on 2 CPUs" and back; nullopt for text not written by format.
std::string format_machine_load(const MachineLoad& load);
std::optional<MachineLoad> parse_machine_load(const std::string& text);

// The load this run started with: DETRAIN_MACHINE_LOAD when set, else a fresh sample (which
// it then exports so that child processes agree). nullopt where it cannot be measured.
std::optional<MachineLoad> startup_machine_load();

}  // namespace detrain
