// Heap policy; see malloc_tuning.h.
#include "common/malloc_tuning.h"

#include <cstdlib>
#include <initializer_list>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace detrain {

namespace {

constexpr int kMmapThresholdMax = 32 << 20;  // glibc's ceiling for M_MMAP_THRESHOLD (64-bit)
constexpr int kTrimThreshold = 1 << 30;      // keep up to 1 GiB of free heap top
constexpr int kTopPad = 64 << 20;            // grow the heap in 64 MiB steps

bool user_tuned_malloc() {
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                           "MALLOC_MMAP_MAX_", "GLIBC_TUNABLES"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

}  // namespace

bool keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
  if (user_tuned_malloc()) return false;
  // Order matters little, but each call must succeed for the policy to hold as a whole.
  return mallopt(M_MMAP_THRESHOLD, kMmapThresholdMax) == 1 &&
         mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1 && mallopt(M_TOP_PAD, kTopPad) == 1;
#else
  return false;
#endif
}

}  // namespace detrain
