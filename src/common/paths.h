// Where things are: the shared data root (DETRAIN_DATA or ../shared/data beside the source
// tree) and project resources (models/, configs/, data/) looked up relative to the working
// directory first, then to the source tree, so the binary works from any directory.
#pragma once

#include <optional>
#include <string>

namespace detrain {

// The shared folder beside the project (../shared: docs, data), or DETRAIN_SHARED when set;
// nullopt when absent.
std::optional<std::string> shared_root();

// DETRAIN_DATA if set, else <source dir>/../shared/data if it exists; nullopt otherwise.
std::optional<std::string> shared_data_root();

// Resolves a resource path such as "models/yolo26.yaml" or "configs/demo.yaml": as given
// (absolute, or relative to the working directory), then relative to `relative_to` (the
// directory of the file that named it, if any), then relative to the source tree. Returns
// the first that exists, or the path unchanged when none does (callers report the error).
std::string resolve_resource(const std::string& path, const std::string& relative_to = "");

// The directory that holds the project sources (compiled in).
std::string source_dir();

}  // namespace detrain
