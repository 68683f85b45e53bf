// Build identity for `detrain --version` and run logs. The definitions are generated at build
// time by scripts/version_info.cmake (git describe of the source tree).
#pragma once

namespace detrain {
const char* version_string();  // project version, e.g. "0.1.0"
const char* git_describe();    // `git describe --always --dirty --tags`, or "unknown"
}  // namespace detrain
