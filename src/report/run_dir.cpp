// Run directories; see run_dir.h.
#include "report/run_dir.h"

#include <filesystem>

#include "common/atomic_file.h"
#include "report/numbered_dir.h"

namespace detrain::report {
namespace fs = std::filesystem;

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
  RunPaths paths = run_paths(create_numbered_dir(project, name, exist_ok));
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
