// Forwarding header: the runtime setup moved to compat/runtime.h (namespace detrain::compat),
// because it drives LibTorch and reads config::RuntimeOptions, neither of which common/ may
// use. Kept only while the trainer split is in flight, for files that still include this path;
// include compat/runtime.h and write compat::apply_runtime instead, then delete this file. The
// layering test counts an include of this file as an edge to compat and lists who still uses it.
#pragma once

#include "compat/runtime.h"

namespace detrain {
using compat::apply_runtime;
using compat::RuntimeInfo;
using compat::version_report;
}  // namespace detrain
