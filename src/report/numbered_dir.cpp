// Numbered folders; see numbered_dir.h.
#include "report/numbered_dir.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/atomic_file.h"
#include "common/errors.h"

namespace detrain::report {
namespace fs = std::filesystem;

namespace {
constexpr int kMaxNumber = 9999;
}  // namespace

std::string create_numbered_dir(const std::string& project, const std::string& name,
                                bool exist_ok) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    throw IoError("run name '" + name + "' must be a plain directory name (train.name, name=)");
  ensure_writable_dir(project);
  for (int n = 1; n <= kMaxNumber; ++n) {
    const std::string candidate =
        (fs::path(project) / (n == 1 ? name : name + std::to_string(n))).string();
    if (::mkdir(candidate.c_str(), 0755) == 0) return candidate;
    if (errno != EEXIST)
      throw IoError("cannot create run directory " + candidate + ": " + std::strerror(errno) +
                    " (choose another train.project or fix its permissions)");
    if (exist_ok) {
      if (!fs::is_directory(candidate))
        throw IoError("run directory " + candidate + " exists but is not a directory");
      ensure_writable_dir(candidate);
      return candidate;
    }
  }
  throw IoError("every run name " + name + ", " + name + "2 ... " + name +
                std::to_string(kMaxNumber) + " under " + project +
                " is taken; choose another name (train.name, name=)");
}

std::string latest_numbered_dir(const std::string& project, const std::string& name) {
  std::error_code ec;
  std::string latest;
  long best = 0;
  for (const auto& entry : fs::directory_iterator(project, ec)) {
    const std::string folder = entry.path().filename().string();
    if (folder.compare(0, name.size(), name) != 0 || !entry.is_directory(ec)) continue;
    const std::string suffix = folder.substr(name.size());
    long n = 0;
    if (suffix.empty()) {
      n = 1;
    } else if (suffix.find_first_not_of("0123456789") == std::string::npos && suffix[0] != '0' &&
               suffix.size() <= 4) {
      n = std::stol(suffix);
      if (n < 2) continue;
    } else {
      continue;
    }
    if (n > best) {
      best = n;
      latest = entry.path().string();
    }
  }
  return latest;
}

}  // namespace detrain::report
