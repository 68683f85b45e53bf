// See memory.h.
#include "common/memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace detrain {

int64_t resident_memory_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages_total = 0, pages_resident = 0;
  if (!(statm >> pages_total >> pages_resident)) return 0;
  return pages_resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

int64_t peak_resident_memory_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports kilobytes
}

int64_t proportional_memory_bytes(int pid) {
  std::ifstream rollup(pid > 0 ? "/proc/" + std::to_string(pid) + "/smaps_rollup"
                               : std::string("/proc/self/smaps_rollup"));
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (rollup >> key) {
    if (key == "Pss:" && rollup >> kb) return kb * 1024;
    rollup.ignore(1 << 20, '\n');
  }
  return 0;
}

}  // namespace detrain
