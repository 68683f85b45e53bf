// Run directories: numbering like the reference (train, train2, train3), exist_ok, standard
// paths, and a clear IoError for an unwritable location.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "common/errors.h"
#include "report/run_dir.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::report;
using detrain::test::TempDir;
namespace fs = std::filesystem;

TEST_CASE("run directories are numbered unless exist_ok", "[unit][train]") {
  TempDir dir;
  const std::string project = dir.file("runs");
  const RunPaths a = create_run_dir(project, "train", false);
  CHECK(a.dir == project + "/train");
  CHECK(fs::is_directory(a.weights_dir));
  const RunPaths b = create_run_dir(project, "train", false);
  CHECK(b.dir == project + "/train2");
  const RunPaths c = create_run_dir(project, "train", false);
  CHECK(c.dir == project + "/train3");
  // exist_ok reuses the plain name.
  const RunPaths d = create_run_dir(project, "train", true);
  CHECK(d.dir == project + "/train");
  // A gap is filled first: the smallest free number wins (as the reference's increment_path).
  fs::remove_all(project + "/train2");
  CHECK(create_run_dir(project, "train", false).dir == project + "/train2");
  // Other names start their own sequence.
  CHECK(create_run_dir(project, "exp", false).dir == project + "/exp");
}

TEST_CASE("run paths name the standard files", "[unit][train]") {
  const RunPaths p = run_paths("runs/x");
  CHECK(p.args_yaml == "runs/x/args.yaml");
  CHECK(p.train_log == "runs/x/train.log");
  CHECK(p.metrics_jsonl == "runs/x/metrics.jsonl");
  CHECK(p.results_csv == "runs/x/results.csv");
  CHECK(p.results_png == "runs/x/results.png");
  CHECK(p.weights_dir == "runs/x/weights");
  CHECK(p.last_ckpt == "runs/x/weights/last.ckpt");
  CHECK(p.best_ckpt == "runs/x/weights/best.ckpt");
  CHECK(p.file("train_batch0.jpg") == "runs/x/train_batch0.jpg");
}

TEST_CASE("an unwritable project directory is a clear IoError", "[unit][train]") {
  TempDir dir;
  CHECK_THROWS_AS(create_run_dir(dir.path(), "a/b", false), IoError);
  // A file where the project directory should be.
  detrain::test::write_text(dir.file("file"), "x");
  CHECK_THROWS_AS(create_run_dir(dir.file("file"), "train", false), IoError);
  if (::geteuid() == 0) return;  // root writes anywhere; the permission case cannot fail
  const std::string locked = dir.file("locked");
  fs::create_directories(locked);
  ::chmod(locked.c_str(), 0555);
  try {
    create_run_dir(locked, "train", false);
    FAIL("expected IoError");
  } catch (const IoError& e) {
    CHECK(std::string(e.what()).find("is not writable") != std::string::npos);
  }
  ::chmod(locked.c_str(), 0755);
  CHECK_FALSE(fs::exists(locked + "/train"));  // nothing half-made
}
