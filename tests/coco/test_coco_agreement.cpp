// One annotation file, two consumers: the loader's training records and the evaluator's ground
// truth come from coco/'s one reader, so they must agree on every image, box, crowd flag and
// keypoint. The file is built to be awkward: annotations before images and interleaved across
// images, crowd boxes, zero-size boxes (zero width, and entirely outside the image), an
// annotation without keypoints, and large, non-contiguous image, annotation and category ids.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "coco/annotations_json.h"
#include "common/errors.h"
#include "data/coco_records.h"
#include "data/dataset.h"
#include "eval/coco_json.h"
#include "test_support.h"

using namespace detrain;
using detrain::test::TempDir;

namespace {

// Pose, K = 3; classes are COCO ids 7 and 1000003 (indices 0 and 1).
std::string write_descriptor(const TempDir& dir) {
  test::write_text(dir.file("d.yaml"), "path: " + dir.path() +
                                           "\ntask: pose\n"
                                           "train: {annotations: t.json, images: images}\n"
                                           "val: {annotations: t.json, images: images}\n"
                                           "classes:\n  - {id: 7, name: a}\n"
                                           "  - {id: 1000003, name: b}\n"
                                           "kpt_shape: [3, 3]\nflip_idx: [0, 2, 1]\n"
                                           "oks_sigmas: [0.1, 0.1, 0.1]\n");
  return dir.file("d.yaml");
}

constexpr int64_t kBig = 4000000000123;  // an image id past 32 bits (exact in a double)

const char* kFile = R"({
  "annotations": [
    {"id": 900000000001, "image_id": 4000000000123, "category_id": 1000003,
     "bbox": [10, 5, 20, 10], "area": 200, "iscrowd": 0, "num_keypoints": 2,
     "keypoints": [12, 6, 2, 20, 8, 1, 0, 0, 0]},
    {"id": 3, "image_id": 0, "category_id": 7, "bbox": [1, 1, 30, 30], "area": 900,
     "iscrowd": 1, "num_keypoints": 0, "keypoints": [0, 0, 0, 0, 0, 0, 0, 0, 0]},
    {"id": 77, "image_id": 4000000000123, "category_id": 7, "bbox": [30, 30, 0, 8],
     "area": 0, "iscrowd": 0, "num_keypoints": 1, "keypoints": [30, 31, 2, 0, 0, 0, 0, 0, 0]},
    {"id": 5, "image_id": 4000000000123, "category_id": 7, "bbox": [90, 40, 30, 30],
     "area": 900, "iscrowd": false},
    {"id": 6, "image_id": 0, "category_id": 1000003, "bbox": [50, 50, 5, 5], "area": 25,
     "iscrowd": 0, "num_keypoints": 1, "keypoints": [51, 51, 2, 0, 0, 0, 0, 0, 0]},
    {"id": 8, "image_id": 4000000000123, "category_id": 7, "bbox": [0, 0, 100, 50],
     "area": 5000, "iscrowd": true},
    {"id": 2, "image_id": 0, "category_id": 7, "bbox": [2.5, 3.25, 10, 12], "area": 120,
     "iscrowd": 0, "num_keypoints": 3, "keypoints": [3, 4, 2, 5, 6, 2, 7, 8, 1]}
  ],
  "images": [
    {"id": 17, "file_name": "c.jpg", "width": 64, "height": 64},
    {"id": 4000000000123, "file_name": "a.jpg", "width": 100, "height": 50},
    {"id": 0, "file_name": "sub/b.jpg", "width": 40, "height": 40}
  ],
  "categories": [{"id": 7, "name": "a"}, {"id": 1000003, "name": "b"}]
})";

using BoxXyxy = data::BoxXyxy;

// The records' view of one GT box: xyxy in float, clipped to the image.
BoxXyxy clipped_xyxy(const eval::BoxXywh& b, int64_t width, int64_t height) {
  const float w = static_cast<float>(width), h = static_cast<float>(height);
  return {std::clamp(static_cast<float>(b.x), 0.f, w), std::clamp(static_cast<float>(b.y), 0.f, h),
          std::clamp(static_cast<float>(b.x + b.w), 0.f, w),
          std::clamp(static_cast<float>(b.y + b.h), 0.f, h)};
}

}  // namespace

TEST_CASE("the loader's records and the evaluator's ground truth agree on one file",
          "[unit][coco]") {
  TempDir dir;
  const data::DatasetInfo info = data::load_dataset(write_descriptor(dir));
  data::RecordOptions no_files;
  no_files.check_files = false;
  const data::Records records = data::parse_records(kFile, "t.json", info, info.train, no_files);
  const eval::CocoGroundTruth gt = eval::parse_ground_truth_json(kFile, "t.json");

  // Same images in the same (file) order; the image without annotations is a background.
  REQUIRE(gt.image_ids == std::vector<int64_t>{17, kBig, 0});
  REQUIRE(records.images.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(records.images[i].image_id == gt.image_ids[i]);
  CHECK(records.images[2].file == (dir.path() + "/images/sub/b.jpg"));
  CHECK(gt.keypoints_per_instance == 3);
  CHECK(gt.num_annotations() == 7);
  CHECK(records.stats.annotations == 7);

  // Per image, GT annotations in file order: crowd ones are the records' crowd boxes, the
  // others with a positive clipped size are the targets, in the same order, with their class
  // and keypoints; the rest (zero size) are exactly the records' drops.
  int64_t dropped = 0, crowd = 0;
  for (size_t i = 0; i < gt.image_ids.size(); ++i) {
    const data::ImageRecord& r = records.images[i];
    std::vector<BoxXyxy> boxes, crowd_boxes;
    std::vector<int32_t> classes;
    std::vector<float> keypoints;
    for (size_t a = 0; a < gt.num_annotations(); ++a) {
      if (gt.ann_image_id[a] != gt.image_ids[i]) continue;
      const BoxXyxy box = clipped_xyxy(gt.ann_bbox[a], r.width, r.height);
      if (gt.ann_iscrowd[a]) {
        crowd_boxes.push_back(box);
        ++crowd;
      } else if (box[2] > box[0] && box[3] > box[1]) {
        boxes.push_back(box);
        classes.push_back(static_cast<int32_t>(info.class_index(gt.ann_category_id[a])));
        for (size_t j = 0; j < 9; ++j)
          keypoints.push_back(static_cast<float>(gt.ann_keypoints[a * 9 + j]));
      } else {
        ++dropped;
      }
    }
    INFO("image id " << gt.image_ids[i]);
    CHECK(r.boxes_xyxy_px == boxes);
    CHECK(r.crowd_boxes_xyxy_px == crowd_boxes);
    CHECK(r.classes == classes);
    CHECK(r.keypoints_px == keypoints);
  }
  CHECK(dropped == 2);  // id 77: zero width; id 6: entirely outside its 40 x 40 image
  CHECK(crowd == 2);    // ids 3 and 8 (iscrowd 1 and true)
  CHECK(records.stats.dropped_empty == dropped);
  CHECK(records.stats.crowd == crowd);
  CHECK(records.images[0].boxes_xyxy_px.empty());  // id 17: background
  CHECK(records.stats.backgrounds == 1);

  // What the two know beyond each other: the crowd flag and area the evaluator scores with, the
  // missing keypoints (zeros in both, and flagged absent for the evaluator).
  const size_t no_keypoints = 3;  // annotation id 5
  REQUIRE(gt.ann_id[no_keypoints] == 5);
  CHECK((gt.ann_fields[no_keypoints] & eval::kGtKeypoints) == 0);
  CHECK((gt.ann_fields[no_keypoints] & eval::kGtNumKeypoints) == 0);
  CHECK(std::all_of(gt.ann_keypoints.begin() + 27, gt.ann_keypoints.begin() + 36,
                    [](double v) { return v == 0; }));
  CHECK(records.images[1].boxes_xyxy_px.size() == 2);  // ids 900000000001 and 5 (clipped)
  CHECK(records.images[1].boxes_xyxy_px[1] == BoxXyxy{90, 40, 100, 50});
  CHECK(std::vector<float>(records.images[1].keypoints_px.begin() + 9,
                           records.images[1].keypoints_px.end()) == std::vector<float>(9, 0.f));
  CHECK(gt.ann_id[0] == 900000000001);
  CHECK(gt.ann_iscrowd == std::vector<uint8_t>{0, 1, 0, 0, 0, 1, 0});
}

TEST_CASE("one read serves both: validation's table is the evaluator's ground truth",
          "[unit][coco]") {
  // Validation reads its split once with the loader's requirements plus the evaluator's
  // categories, then builds the records from the table and scores against the table itself.
  TempDir dir;
  const data::DatasetInfo info = data::load_dataset(write_descriptor(dir));
  coco::ReadOptions both = data::record_read_options(info);
  both.require_categories = true;
  const coco::AnnotationTable table = coco::read_annotations(kFile, "t.json", both);
  const eval::CocoGroundTruth gt = eval::parse_ground_truth_json(kFile, "t.json");
  CHECK(table.image_ids == gt.image_ids);
  CHECK(table.ann_id == gt.ann_id);
  CHECK(table.ann_image_id == gt.ann_image_id);
  CHECK(table.ann_category_id == gt.ann_category_id);
  CHECK(table.ann_area == gt.ann_area);
  CHECK(table.ann_iscrowd == gt.ann_iscrowd);
  CHECK(table.ann_num_keypoints == gt.ann_num_keypoints);
  CHECK(table.ann_keypoints == gt.ann_keypoints);
  CHECK(table.ann_fields == gt.ann_fields);
  REQUIRE(table.ann_bbox.size() == gt.ann_bbox.size());
  for (size_t i = 0; i < table.ann_bbox.size(); ++i) {
    CHECK(table.ann_bbox[i].x == gt.ann_bbox[i].x);
    CHECK(table.ann_bbox[i].w == gt.ann_bbox[i].w);
  }
  // The evaluator's read skips what only the loader needs.
  CHECK(table.image_files == std::vector<std::string>{"c.jpg", "a.jpg", "sub/b.jpg"});
  CHECK(gt.image_files == std::vector<std::string>(3, ""));

  data::RecordOptions no_files;
  no_files.check_files = false;
  const data::Records built = data::build_records(table, info, info.val, no_files);
  const data::Records parsed = data::parse_records(kFile, "t.json", info, info.val, no_files);
  REQUIRE(built.images.size() == parsed.images.size());
  for (size_t i = 0; i < built.images.size(); ++i) {
    CHECK(built.images[i].boxes_xyxy_px == parsed.images[i].boxes_xyxy_px);
    CHECK(built.images[i].keypoints_px == parsed.images[i].keypoints_px);
  }
  // A table read the evaluator's way has no file names: the loader refuses it.
  CHECK_THROWS_AS(data::build_records(gt, info, info.val, no_files), std::invalid_argument);
}

TEST_CASE("both consumers refuse what the one reader refuses, with one message", "[unit][coco]") {
  TempDir dir;
  const data::DatasetInfo info = data::load_dataset(write_descriptor(dir));
  const auto both_errors = [&](const std::string& annotation) {
    const std::string json = R"({"images": [{"id": 1, "file_name": "a.jpg", "width": 9,
        "height": 9}], "categories": [{"id": 7}], "annotations": [)" +
                             annotation + "]}";
    std::string a = "no error", b = "no error";
    try {
      data::parse_records(json, "f.json", info, info.train);
    } catch (const DataError& e) {
      a = e.what();
    }
    try {
      eval::parse_ground_truth_json(json, "f.json");
    } catch (const DataError& e) {
      b = e.what();
    }
    return std::make_pair(a, b);
  };
  // iscrowd 2 was "crowd" to the loader and an error to the evaluator; now an error to both.
  const auto crowd = both_errors(R"({"id": 4, "image_id": 1, "category_id": 7, "bbox": [1, 1, 2, 2],
                     "iscrowd": 2})");
  CHECK_THAT(crowd.first, Catch::Contains("'iscrowd' must be 0 or 1"));
  CHECK(crowd.first == crowd.second);
  const auto box = both_errors(R"({"id": 4, "image_id": 1, "category_id": 7, "bbox": [1, 1, 2]})");
  CHECK_THAT(box.first, Catch::Contains("annotation id 4: 'bbox' has 3 values"));
  CHECK(box.first == box.second);
  const auto overflow =
      both_errors(R"({"id": 4, "image_id": 1, "category_id": 7, "bbox": [1, 1, 2, 1e999]})");
  CHECK_THAT(overflow.first, Catch::Contains("overflows a double"));
  CHECK(overflow.first == overflow.second);
}
