// `detrain data stats`: a census of a split (instances per class, box sizes, backgrounds,
// problems found). The preview picture is drawn by train/batch_plots (the same mosaic as the
// trainer's train_batch*.jpg).
#pragma once

#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "data/coco_records.h"
#include "data/collate.h"
#include "data/dataset.h"

namespace detrain::data {

struct SplitStats {
  std::vector<int64_t> instances_per_class;  // [nc]
  std::vector<int64_t> images_per_class;     // [nc]
  // Boxes by sqrt(area) in original pixels: < 8, 8-16, 16-32, 32-64, 64-128, 128-256, >= 256.
  std::vector<int64_t> size_histogram;
  int64_t keypoint_instances = 0;  // instances with at least one labelled keypoint
  int64_t labelled_keypoints = 0;
  int64_t corrupt_images = 0;  // with check_images: files that did not decode
  std::vector<std::string> corrupt_examples;
  RecordStats records;
};

// `check_images` decodes every image (slow on big sets) to find corrupt files.
SplitStats compute_stats(const Records& records, const DatasetInfo& info, bool check_images);

// The text report `detrain data stats` prints.
std::string format_stats(const SplitStats& stats, const DatasetInfo& info,
                         const std::string& split);

}  // namespace detrain::data
