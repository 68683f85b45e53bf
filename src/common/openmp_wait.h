// OpenMP's wait policy for the long-running commands: passive (idle workers sleep in the kernel)
// unless the user set OMP_WAIT_POLICY. Differs from LibTorch's default, where GNU OpenMP spins at
// every barrier: on a 2-core machine shared with loader threads or other processes, a thread
// spinning for its descheduled partner made a 320 px yolo26n step 4-5x slower.
#pragma once

namespace detrain {

// Sets OMP_WAIT_POLICY=PASSIVE in this process's environment, for the programs it execs, when
// the variable is unset and `command` is one that trains or runs a model. True when it set it.
// The front end calls it before it execs detrain-torch, so that one exec serves both.
bool set_passive_openmp_wait_for(const char* command);

// libgomp reads OMP_WAIT_POLICY once, while the process loads, and libc's start-up resets any
// environment change made earlier than main; so the only way to set it from inside is to set it
// and exec the same binary again with the same arguments. Does that (Linux, once) when
// set_passive_openmp_wait_for(command) sets it; otherwise, or when the exec fails, returns and
// the process continues with the policy it has.
void reexec_with_passive_openmp_wait(const char* command, char** argv);

}  // namespace detrain
