// Process memory as the kernel reports it (/proc/self/statm, smaps_rollup, getrusage), for logs
// and benchmarks: resident set now, its peak, and the proportional set.
#pragma once

#include <cstdint>

namespace detrain {

// Resident set size in bytes now (0 when /proc is unavailable).
int64_t resident_memory_bytes();

// Peak resident set size in bytes since the process started.
int64_t peak_resident_memory_bytes();

// Proportional set size of process `pid` (0: this one) in bytes: resident pages, each shared
// page divided by the number of processes that map it, so the sum over the ranks of a run
// counts a shared cache once (RSS counts it in every rank). 0 when unavailable.
int64_t proportional_memory_bytes(int pid = 0);

}  // namespace detrain
