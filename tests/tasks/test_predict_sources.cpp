// `detrain predict`'s inputs and output names: a linked image keeps its own name (a data set
// whose images are symbolic links into another tree), and no name leaves the output folder.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "tasks/predict_sources.h"
#include "test_support.h"

using namespace detrain;
namespace fs = std::filesystem;

TEST_CASE("predict sources: linked images keep their names inside the output folder",
          "[unit][predict]") {
  test::TempDir dir("predict-sources");
  test::write_text(dir.file("elsewhere/deep/photo.jpg"), "not decoded here");
  fs::create_directories(dir.file("set/images"));
  REQUIRE(::symlink(dir.file("elsewhere/deep/photo.jpg").c_str(),
                    dir.file("set/images/000001.jpg").c_str()) == 0);
  const auto images = tasks::source_images(dir.file("set/images"), false);
  REQUIRE(images.size() == 1);
  CHECK(images[0].relative == "000001.jpg");  // not the link target's path

  tasks::OutputNames names(dir.file("out"));
  CHECK(names.claim("000001.jpg") == dir.file("out/000001.jpg"));
  CHECK(names.claim("../../escape.jpg") == dir.file("out/escape.jpg"));
  CHECK(names.claim("/abs/x.jpg") == dir.file("out/abs/x.jpg"));
  CHECK(names.claim("sub/./y.jpg", ".txt") == dir.file("out/sub/y.txt"));
}
