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

}  // namespace detrain::report
