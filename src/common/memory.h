// Process memory as the kernel reports it (/proc/self/statm, getrusage), for logs and
// benchmarks: resident set now and its peak.
#pragma once

#include <cstdint>

namespace detrain {

// Resident set size in bytes now (0 when /proc is unavailable).
int64_t resident_memory_bytes();

// Peak resident set size in bytes since the process started.
int64_t peak_resident_memory_bytes();

}  // namespace detrain
