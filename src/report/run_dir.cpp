// Run directories; see run_dir.h.
#include "report/run_dir.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/atomic_file.h"
#include "common/errors.h"

namespace detrain::report {
namespace fs = std::filesystem;

namespace {
constexpr int kMaxRunNumber = 9999;
}  // namespace

std::string RunPaths::file(const std::string& name) const {
  return (fs::path(dir) / name).string();
}

RunPaths run_paths(const std::string& dir) {
  const fs::path d(dir);
  RunPaths p;
  p.dir = d.string();
  p.args_yaml = (d / "args.yaml").string();
  p.train_log = (d / "train.log").string();
  p.metrics_jsonl = (d / "metrics.jsonl").string();
  p.results_csv = (d / "results.csv").string();
  p.results_png = (d / "results.png").string();
  p.weights_dir = (d / "weights").string();
  p.last_ckpt = (d / "weights" / "last.ckpt").string();
  p.best_ckpt = (d / "weights" / "best.ckpt").string();
  return p;
}

RunPaths create_run_dir(const std::string& project, const std::string& name, bool exist_ok) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    throw IoError("run name '" + name + "' must be a plain directory name (train.name)");
  ensure_writable_dir(project);
  std::string chosen;
  for (int n = 1; n <= kMaxRunNumber && chosen.empty(); ++n) {
    const std::string candidate =
        (fs::path(project) / (n == 1 ? name : name + std::to_string(n))).string();
    if (::mkdir(candidate.c_str(), 0755) == 0) {
      chosen = candidate;
    } else if (errno != EEXIST) {
      throw IoError("cannot create run directory " + candidate + ": " + std::strerror(errno) +
                    " (choose another train.project or fix its permissions)");
    } else if (exist_ok) {
      if (!fs::is_directory(candidate))
        throw IoError("run directory " + candidate + " exists but is not a directory");
      chosen = candidate;
    }
  }
  if (chosen.empty())
    throw IoError("every run name " + name + ", " + name + "2 ... " + name +
                  std::to_string(kMaxRunNumber) + " under " + project +
                  " is taken; choose another train.name");
  RunPaths paths = run_paths(chosen);
  ensure_writable_dir(paths.dir);
  ensure_writable_dir(paths.weights_dir);
  return paths;
}

std::string resume_run_dir(const std::string& where) {
  if (fs::is_directory(where)) return where;
  return fs::path(where).parent_path().parent_path().string();
}

std::string resume_checkpoint(const std::string& where) {
  return fs::is_directory(where) ? run_paths(where).last_ckpt : where;
}

}  // namespace detrain::report
