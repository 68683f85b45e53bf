// OpenMP's wait policy for the long-running commands, chosen once at start from how busy the
// machine is (machine_load.h) unless the user set OMP_WAIT_POLICY or GOMP_SPINCOUNT:
// - idle cores: bounded spinning (GOMP_SPINCOUNT=kBoundedSpins, about 0.1 ms at a barrier before
//   sleeping): as fast as unbounded spinning, while the passive policy made a 2-core step
//   15-45 % slower (docs/perf/2026-12-07-openmp-wait-and-precision.md);
// - busy cores (other runnable threads would share ours): passive, since a thread spinning for
//   its descheduled partner made steps several times slower there
//   (docs/perf/2026-12-01-cpu-step-profile.md).
// libgomp reads both variables once, while the process loads, so the choice is made in the
// environment before an exec: the front end's exec of detrain-torch, or detrain-torch's exec of
// itself when started directly.
#pragma once

#include <string>

namespace detrain {

// Spins at a barrier before a thread sleeps (libgomp's default is 300000, ACTIVE's 3e10).
constexpr long kBoundedSpins = 10000;

// Chooses the policy into this process's environment, for the programs it execs, when neither
// variable is set and `command` trains or runs a model; records it in DETRAIN_OPENMP_WAIT. True
// when it set something.
bool choose_openmp_wait_for(const char* command);

// Does that and execs the same binary again with the same arguments (Linux, once) when
// choose_openmp_wait_for(command) set something; otherwise, or when the exec fails, returns and
// the process continues with the policy it has.
void reexec_with_chosen_openmp_wait(const char* command, char** argv);

// What this process runs with, for logs and bench tables: "bounded spin (GOMP_SPINCOUNT=10000):
// idle CPUs, 0.1 other runnable threads on 2 CPUs", "passive: busy CPUs, …", "OMP_WAIT_POLICY=
// ACTIVE (set by you)" or "libgomp default".
std::string openmp_wait_in_effect();

}  // namespace detrain
