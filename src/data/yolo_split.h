// A YOLO-format split (Ultralytics data YAML + one txt label file per image) as the same COCO
// annotation table a COCO JSON split gives, so that the loader's records and the built-in COCO
// evaluator see one ground truth whatever the format. The table: images in the reference's
// order (sorted paths) with absolute file names and header sizes; category id = class index,
// named from the YAML; one annotation per label row with its box in pixels of the original
// image, iscrowd 0, keypoints in pixels with their visibility. Labels carry no masks, so the
// area COCO takes from a segment is the box's w * h for detection sets, and kPoseAreaPerBox *
// w * h for pose sets, where it is the OKS scale. Images that are not whole (data/image_check.h)
// and corrupt label files are dropped with one warning each naming the file (as the reference's
// verify_image_label does), from the ground truth and so from what is predicted; the warnings
// of the scan are shown again on every run that reads the records cache. No LibTorch.
#pragma once

#include <string>

#include "coco/annotations.h"
#include "data/dataset.h"

namespace detrain::data {

// COCO's segment area of a person with keypoints as a fraction of its box: 0.53, the factor
// Ultralytics 8.4.190's pose metric (kpt_iou) uses. On coco-mini's 154 people with keypoints the
// segment area is 0.53 of the box (median 0.537, geometric mean 0.509), and 0.53 * w * h is
// within 0.21 in mean |log| error of it where w * h is off by 0.68 (docs/evaluator.md).
constexpr double kPoseAreaPerBox = 0.53;

struct YoloScanSummary {
  int64_t images = 0;              // images kept
  int64_t backgrounds = 0;         // kept, with no label file or no rows
  int64_t missing_labels = 0;      // no label file ("nm")
  int64_t corrupt = 0;             // images dropped (unreadable image or label file)
  int64_t duplicates_removed = 0;  // duplicate rows dropped
  int64_t polygons = 0;            // polygon rows reduced to boxes
  std::string cache;               // "read", "written", "" (not used) or why not written
};

// The table of `split` ("train" or "val") of a DatasetInfo with format kYolo. With
// `cache_records` the table is kept in a records cache keyed on every image's and label file's
// path, size and modification time (data/cache_files.h: beside the split's first source), and
// read from it while none of them changed. Throws DataError when a source does not exist or
// holds no image.
coco::AnnotationTable read_yolo_split(const DatasetInfo& info, const std::string& split,
                                      bool cache_records, YoloScanSummary* summary = nullptr);

// The image id of each image path of a split: the file stems' numbers when every stem is a
// decimal number and no two are equal (COCO's file names, so ids match the COCO JSON's), else
// 1..n in order.
std::vector<int64_t> yolo_image_ids(const std::vector<std::string>& image_paths);

}  // namespace detrain::data
