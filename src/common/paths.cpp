// Path lookup; see paths.h.
#include "common/paths.h"

#include <cstdlib>
#include <filesystem>

namespace detrain {
namespace fs = std::filesystem;

std::string source_dir() { return DETRAIN_SOURCE_DIR; }

std::optional<std::string> shared_root() {
  if (const char* env = std::getenv("DETRAIN_SHARED"); env && *env) return std::string(env);
  fs::path beside = fs::path(source_dir()).parent_path() / "shared";
  std::error_code ec;
  if (fs::is_directory(beside, ec)) return beside.lexically_normal().string();
  return std::nullopt;
}

std::optional<std::string> shared_data_root() {
  if (const char* env = std::getenv("DETRAIN_DATA"); env && *env) return std::string(env);
  auto root = shared_root();
  if (!root) return std::nullopt;
  fs::path data = fs::path(*root) / "data";
  std::error_code ec;
  if (fs::is_directory(data, ec)) return data.string();
  return std::nullopt;
}

std::string resolve_resource(const std::string& path, const std::string& relative_to) {
  std::error_code ec;
  fs::path p(path);
  if (p.is_absolute() || fs::exists(p, ec)) return path;
  if (!relative_to.empty()) {
    fs::path candidate = fs::path(relative_to) / p;
    if (fs::exists(candidate, ec)) return candidate.lexically_normal().string();
  }
  fs::path in_source = fs::path(source_dir()) / p;
  if (fs::exists(in_source, ec)) return in_source.lexically_normal().string();
  return path;
}

}  // namespace detrain
