// How many cores this process may run on: the CPUs of its affinity mask (taskset, cgroup cpusets
// under Slurm or containers), not the machine's count, so that "all cores" defaults never start
// more busy threads than the process can use.
#pragma once

#include <sched.h>

#include <thread>

namespace detrain {

inline int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
  const unsigned cores = std::thread::hardware_concurrency();
  return cores == 0 ? 1 : static_cast<int>(cores);
}

}  // namespace detrain
