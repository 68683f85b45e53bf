// Cache file locations; see cache_files.h.
#include "data/cache_files.h"

#include <spdlog/fmt/fmt.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "common/hash64.h"

namespace detrain::data {

namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// A file in a shared cache folder, named after the data file and its absolute path.
std::string in_folder(const fs::path& folder, const fs::path& data_file, const std::string& kind) {
  std::error_code ec;
  const std::string absolute = fs::absolute(data_file, ec).lexically_normal().string();
  return (folder / fmt::format("{}-{:016x}.detrain-{}", data_file.filename().string(),
                               hash64(absolute.data(), absolute.size()), kind))
      .string();
}

}  // namespace

std::string cache_file_for(const std::string& data_file, const std::string& kind) {
  const fs::path file(data_file);
  if (const std::string dir = env("DETRAIN_CACHE_DIR"); !dir.empty())
    return in_folder(dir, file, kind);
  const fs::path beside = file.has_parent_path() ? file.parent_path() : fs::path(".");
  if (::access(beside.c_str(), W_OK) == 0) return data_file + ".detrain-" + kind;
  fs::path user = env("XDG_CACHE_HOME");
  if (user.empty()) user = fs::path(env("HOME").empty() ? "/tmp" : env("HOME")) / ".cache";
  return in_folder(user / "detrain", file, kind);
}

}  // namespace detrain::data
