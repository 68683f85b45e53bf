// The reference's folder numbering (name, name2, name3, ...; exist_ok reuses name) that runs,
// predict's runs/predict and val's runs/val share.
#include <catch2/catch.hpp>
#include <filesystem>

#include "common/errors.h"
#include "report/numbered_dir.h"
#include "test_support.h"

using namespace detrain;
namespace fs = std::filesystem;

TEST_CASE("numbered folders: name, name2, name3, exist_ok reuses name", "[unit][report]") {
  test::TempDir dir("numbered");
  const std::string project = dir.file("runs");  // made on first use
  CHECK(report::create_numbered_dir(project, "predict", false) == project + "/predict");
  CHECK(report::create_numbered_dir(project, "predict", false) == project + "/predict2");
  CHECK(report::create_numbered_dir(project, "predict", true) == project + "/predict");
  CHECK(report::create_numbered_dir(project, "predict", false) == project + "/predict3");
  CHECK(report::create_numbered_dir(project, "val", false) == project + "/val");
  // Nothing is put inside (a training run's weights/ is run_dir's).
  CHECK(fs::is_empty(project + "/predict2"));
  CHECK_THROWS_AS(report::create_numbered_dir(project, "a/b", false), IoError);
  test::write_text(dir.file("runs/file"), "x");
  CHECK_THROWS_AS(report::create_numbered_dir(project, "file", true), IoError);
}
