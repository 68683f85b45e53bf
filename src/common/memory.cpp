// See memory.h.
#include "common/memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>

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

}  // namespace detrain
