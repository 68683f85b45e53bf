// `skeleton` in data set YAMLs (detrain descriptors and Ultralytics data YAMLs): 0-based
// keypoint index pairs, read into DatasetInfo for the plots, and a one-line error naming the
// file, the key and the entry when a pair is malformed or names a keypoint that is not there.
#include <catch2/catch.hpp>
#include <filesystem>

#include "common/errors.h"
#include "data/dataset.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::data;
using detrain::test::TempDir;
using detrain::test::write_text;
namespace fs = std::filesystem;

namespace {

struct Sets {
  TempDir dir{"skeleton"};
  Sets() {
    for (const char* d : {"images/train", "images/val"}) fs::create_directories(dir.file(d));
  }
  // An Ultralytics data YAML with 3 keypoints and `extra` appended.
  std::string yolo(const std::string& extra) const {
    write_text(dir.file("pose.yaml"), "path: " + dir.path() +
                                          "\ntrain: images/train\nval: images/val\n"
                                          "names: [person]\nkpt_shape: [3, 3]\n" +
                                          extra);
    return dir.file("pose.yaml");
  }
  // A detrain descriptor with 3 keypoints and `extra` appended.
  std::string descriptor(const std::string& extra) const {
    write_text(dir.file("desc.yaml"),
               "path: " + dir.path() +
                   "\ntask: pose\ntrain: {annotations: a.json, images: images}\n"
                   "val: {annotations: b.json, images: images}\nclasses: [{id: 1, name: p}]\n"
                   "kpt_shape: [3, 3]\n" +
                   extra);
    return dir.file("desc.yaml");
  }
};

std::string error_of(const std::string& yaml) {
  try {
    load_dataset(yaml);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("a data YAML's skeleton is read as 0-based limbs", "[unit][data]") {
  const Sets s;
  const std::vector<std::array<int, 2>> limbs = {{0, 1}, {1, 2}};
  CHECK(load_dataset(s.yolo("skeleton: [[0, 1], [1, 2]]\n")).skeleton == limbs);
  CHECK(load_dataset(s.descriptor("skeleton: [[0, 1], [1, 2]]\n")).skeleton == limbs);
  CHECK(load_dataset(s.yolo("")).skeleton.empty());  // none given: the plots pick COCO's or none
}

TEST_CASE("a skeleton naming a missing keypoint is a one-line error naming file and key",
          "[unit][data]") {
  const Sets s;
  for (const std::string& file :
       {s.yolo("skeleton: [[0, 1], [2, 3]]\n"), s.descriptor("skeleton: [[0, 1], [2, 3]]\n")}) {
    const std::string e = error_of(file);
    INFO(e);
    CHECK_THAT(e, Catch::StartsWith(file + ": 'skeleton' entry 1 [2, 3] names a keypoint "
                                           "outside 0-2"));
    CHECK(e.find('\n') == std::string::npos);
  }
  CHECK_THAT(error_of(s.yolo("skeleton: [[0, -1]]\n")), Catch::Contains("'skeleton' entry 0"));
  CHECK_THAT(error_of(s.yolo("skeleton: [[0, 1, 2]]\n")),
             Catch::Contains("'skeleton' entry 0 must be a list of [a, b]"));
  CHECK_THAT(error_of(s.yolo("skeleton: [[0, a]]\n")), Catch::Contains("'skeleton' entry 0"));
  CHECK_THAT(error_of(s.yolo("skeleton: 3\n")), Catch::Contains("'skeleton' must be a list"));
}
