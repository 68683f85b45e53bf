// Process-wide runtime settings applied once at start: LibTorch intra-op threads (set from the
// config, never LibTorch's version-dependent default), OpenCV's thread pool (off: loader workers
// are our own threads), the global seed and deterministic-kernel preferences. Reported at start.
// In compat because it sets LibTorch's process state through compat's wrappers. (`--version` is
// apps/version_report.h: the front end prints it without LibTorch.)
#pragma once

#include <string>

#include "config/runtime_options.h"

namespace detrain::compat {

struct RuntimeInfo {
  int torch_threads = 0;
  int opencv_threads = 0;
  int cores = 0;
  int64_t seed = 0;
  std::string device;
  std::string summary() const;  // one line for logs
};

RuntimeInfo apply_runtime(const config::RuntimeOptions& options);

// Sends LibTorch's own messages (TORCH_WARN through c10's warning handler, and c10's LOG lines
// below ERROR) to detrain's logger at debug level, prefixed "LibTorch:": shown with -v, never
// an extra line in the output of a command that promises one line (an invalid
// ATEN_CPU_CAPABILITY, a deprecation notice). Call once at start, before any tensor work.
void route_libtorch_messages();

}  // namespace detrain::compat
