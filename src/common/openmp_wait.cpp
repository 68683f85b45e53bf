// Passive OpenMP wait policy by re-exec; see openmp_wait.h.
#include "common/openmp_wait.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace detrain {

bool set_passive_openmp_wait_for(const char* command) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || command == nullptr) return false;
  // Short commands (config, model, eval, data, --help) would only pay a second start-up.
  bool long_running = false;
  for (const char* name : {"train", "val", "predict", "bench"})
    long_running = long_running || std::strcmp(command, name) == 0;
  return long_running && setenv("OMP_WAIT_POLICY", "PASSIVE", /*overwrite=*/0) == 0;
}

void reexec_with_passive_openmp_wait(const char* command, char** argv) {
#if defined(__linux__)
  if (set_passive_openmp_wait_for(command))
    execv("/proc/self/exe", argv);  // returns only on failure
#else
  (void)command;
  (void)argv;
#endif
}

}  // namespace detrain
