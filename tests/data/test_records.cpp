// Descriptors and COCO records: the shipped coco-mini descriptors against the data set's own
// README counts, the COCO id <-> index map, crowd and background handling, clipping and
// dropping of bad boxes, and the errors bad input gets (file and position, annotation id,
// missing image paths).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "common/errors.h"
#include "data/coco_records.h"
#include "data/dataset.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::data;
using detrain::test::TempDir;
namespace fs = std::filesystem;

namespace {

// A descriptor for hand-written annotation files in `dir` (classes: COCO ids 1 and 3).
std::string write_descriptor(const TempDir& dir, const std::string& extra = "") {
  test::write_text(dir.file("d.yaml"),
                   "path: " + dir.path() +
                       "\ntrain: {annotations: train.json, images: images}\n"
                       "val: {annotations: val.json, images: images}\n"
                       "classes:\n  - {id: 1, name: person}\n  - {id: 3, name: car}\n" +
                       extra);
  return dir.file("d.yaml");
}

const char* kImages =
    R"("images": [{"id": 7, "file_name": "a.jpg", "width": 100, "height": 50},
                  {"id": 8, "file_name": "b.jpg", "width": 40, "height": 40}])";

}  // namespace

TEST_CASE("coco-mini descriptors map COCO ids to contiguous indices", "[unit][data][records]") {
  if (!test::shared_data_or_skip("coco-mini")) return;
  const DatasetInfo info = load_dataset("data/coco-mini.yaml");
  REQUIRE(info.nc() == 80);
  CHECK(info.names[0] == "person");
  CHECK(info.names[79] == "toothbrush");
  CHECK(info.class_index(1) == 0);
  CHECK(info.class_index(13) == 11);  // stop sign: id 12 is unused in COCO
  CHECK(info.class_index(90) == 79);
  CHECK(info.class_index(12) == -1);
  CHECK(info.coco_ids[11] == 13);
  CHECK_FALSE(info.has_keypoints());
  CHECK(fs::path(info.root).filename() == "coco-mini");

  const DatasetInfo pose = load_dataset("data/coco-mini-pose.yaml");
  CHECK(pose.nc() == 1);
  CHECK(pose.kpt_count == 17);
  CHECK(pose.flip_idx[1] == 2);  // left eye <-> right eye
  CHECK(pose.oks_sigmas.size() == 17);
  CHECK(pose.skeleton.size() == 19);
}

TEST_CASE("coco-mini records match the data set's published counts", "[unit][data][records]") {
  if (!test::shared_data_or_skip("coco-mini")) return;
  const DatasetInfo info = load_dataset("data/coco-mini.yaml");
  // Counts from shared/data/coco-mini/README.md: train 80 images, 739 boxes, 8 crowd.
  const Records train = load_records(info, "train");
  CHECK(train.stats.images == 80);
  CHECK(train.stats.annotations == 739);
  CHECK(train.stats.crowd == 8);
  int64_t targets = 0, crowd = 0;
  for (const auto& r : train.images) {
    targets += static_cast<int64_t>(r.boxes_xyxy_px.size());
    crowd += static_cast<int64_t>(r.crowd_boxes_xyxy_px.size());
    for (const auto& b : r.boxes_xyxy_px) {
      CHECK(b[0] >= 0);
      CHECK(b[2] <= r.width);
      CHECK(b[2] > b[0]);
    }
    CHECK(r.keypoints_px.empty());
  }
  CHECK(crowd == 8);
  CHECK(targets == 739 - 8 - train.stats.dropped_empty);
  CHECK(train.stats.backgrounds == 0);  // every coco-mini image has a box

  // Pose: only the 28 train images with a person with keypoints (README), 17 x 3 each.
  const DatasetInfo pose = load_dataset("data/coco-mini-pose.yaml");
  const Records kp = load_records(pose, "train");
  CHECK(kp.stats.images == 28);
  CHECK(kp.stats.images_filtered == 52);
  for (const auto& r : kp.images) CHECK(r.keypoints_px.size() == r.boxes_xyxy_px.size() * 51);
  CHECK(load_records(pose, "val").stats.images == 32);
}

TEST_CASE("records: crowd kept apart, backgrounds kept, bad boxes clipped or dropped",
          "[unit][data][records]") {
  TempDir dir;
  const DatasetInfo info = load_dataset(write_descriptor(dir));
  const std::string json = std::string("{") + kImages + R"(, "annotations": [
      {"id": 1, "image_id": 7, "category_id": 3, "bbox": [10, 5, 20, 10], "iscrowd": 0},
      {"id": 2, "image_id": 7, "category_id": 1, "bbox": [90, 40, 30, 30], "iscrowd": 0},
      {"id": 3, "image_id": 7, "category_id": 1, "bbox": [0, 0, 50, 50], "iscrowd": 1},
      {"id": 4, "image_id": 7, "category_id": 1, "bbox": [120, 10, 5, 5], "iscrowd": 0},
      {"id": 5, "image_id": 7, "category_id": 1, "bbox": [20, 20, 0, 5]}],
      "categories": []})";
  RecordOptions no_files;
  no_files.check_files = false;
  const Records r = parse_records(json, "t.json", info, info.train, no_files);
  REQUIRE(r.images.size() == 2);
  const auto& a = r.images[0];
  CHECK(a.file == (fs::path(dir.path()) / "images" / "a.jpg").string());
  REQUIRE(a.boxes_xyxy_px.size() == 2);
  CHECK(a.classes == std::vector<int32_t>{1, 0});         // COCO id 3 -> index 1
  CHECK(a.boxes_xyxy_px[0] == BoxXyxy{10, 5, 30, 15});    // xywh -> xyxy
  CHECK(a.boxes_xyxy_px[1] == BoxXyxy{90, 40, 100, 50});  // clipped to 100 x 50
  CHECK(a.crowd_boxes_xyxy_px.size() == 1);               // never a target
  CHECK(r.images[1].boxes_xyxy_px.empty());               // background kept
  CHECK(r.stats.backgrounds == 1);
  CHECK(r.stats.crowd == 1);
  CHECK(r.stats.clipped == 2);        // ids 2 and 4 reach outside
  CHECK(r.stats.dropped_empty == 2);  // id 4 (entirely outside) and id 5 (zero width)

  RecordOptions single = no_files;
  single.single_cls = true;
  CHECK(parse_records(json, "t.json", info, info.train, single).images[0].classes ==
        std::vector<int32_t>{0, 0});
}

TEST_CASE("records: bad input names the file, position or annotation", "[unit][data][records]") {
  TempDir dir;
  const DatasetInfo info = load_dataset(write_descriptor(dir));
  RecordOptions no_files;
  no_files.check_files = false;
  auto message = [&](const std::string& json, const RecordOptions& o) {
    try {
      parse_records(json, "bad.json", info, info.train, o);
    } catch (const DataError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Malformed JSON: file name and byte offset.
  CHECK_THAT(message(std::string("{") + kImages + ", \"annotations\": [{\"id\": 1,,}]}", no_files),
             Catch::Contains("bad.json") && Catch::Contains("byte"));
  // Truncated file.
  CHECK_THAT(message(std::string("{") + kImages + ", \"annotations\": [", no_files),
             Catch::Contains("bad.json"));
  // Unknown category: the annotation id, its image and what to do.
  CHECK_THAT(message(std::string("{") + kImages +
                         R"(, "annotations": [{"id": 42, "image_id": 8, "category_id": 2,
                         "bbox": [1, 1, 2, 2]}]})",
                     no_files),
             Catch::Contains("annotation id 42") && Catch::Contains("category id 2") &&
                 Catch::Contains("classes"));
  // Missing image files are listed at scan time (their folder exists: else that is the error,
  // tests/data/test_yolo_split.cpp).
  fs::create_directories(dir.file("images"));
  CHECK_THAT(message(std::string("{") + kImages + "}", RecordOptions{}),
             Catch::Contains("2 image file(s) missing") && Catch::Contains("a.jpg") &&
                 Catch::Contains("skip_missing"));
  RecordOptions skip;
  skip.skip_missing = true;
  // A whole image: the scan also drops files that are not (data/image_check.h).
  REQUIRE(cv::imwrite(dir.file("images/b.jpg"), cv::Mat(40, 40, CV_8UC3, cv::Scalar::all(90))));
  const Records r =
      parse_records(std::string("{") + kImages + "}", "ok.json", info, info.train, skip);
  CHECK(r.stats.images_missing == 1);
  CHECK(r.images.size() == 1);
  CHECK(r.stats.missing_examples.at(0).find("a.jpg") != std::string::npos);
}

TEST_CASE("descriptors: root override, DETRAIN_DATA and bad keys", "[unit][data][records]") {
  TempDir dir;
  const std::string yaml = write_descriptor(dir);
  CHECK(load_dataset(yaml, "/elsewhere").train.images == "/elsewhere/images");

  test::write_text(dir.file("shared.yaml"),
                   "path: ../shared/data/coco\ntrain: {annotations: a.json, images: i}\n"
                   "val: {annotations: b.json, images: j}\nclasses: [{id: 1, name: x}]\n");
  const DatasetInfo shared = [&] {
    const test::ScopedEnv data_root("DETRAIN_DATA", dir.path());
    return load_dataset(dir.file("shared.yaml"));
  }();
  CHECK(shared.root == (fs::path(dir.path()) / "coco").string());
  CHECK(shared.val.annotations == (fs::path(dir.path()) / "coco" / "b.json").string());

  auto error_of = [&](const std::string& extra) {
    try {
      load_dataset(write_descriptor(dir, extra));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(error_of("kpt_shape: [3, 3]\nflip_idx: [0, 0, 1]\n"), Catch::Contains("flip_idx"));
  CHECK_THAT(error_of("kpt_shape: [3, 3]\noks_sigmas: [0.1]\n"), Catch::Contains("oks_sigmas"));
  CHECK_THAT(error_of("task: segment\n"), Catch::Contains("task"));
  CHECK_THROWS_AS(load_dataset("data/no-such.yaml"), ConfigError);
}
