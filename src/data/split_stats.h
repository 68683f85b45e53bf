// `detrain data stats`: a census of a split (instances per class, box sizes, backgrounds,
// problems found). Plain C++ without LibTorch or OpenCV, so the front end runs it; checking that
// every image decodes takes a decoder, which the caller passes in.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/coco_records.h"
#include "data/dataset.h"

namespace detrain::data {

struct SplitStats {
  std::vector<int64_t> instances_per_class;  // [nc]
  std::vector<int64_t> images_per_class;     // [nc]
  // Boxes by sqrt(area) in original pixels: < 8, 8-16, 16-32, 32-64, 64-128, 128-256, >= 256.
  std::vector<int64_t> size_histogram;
  int64_t keypoint_instances = 0;  // instances with at least one labelled keypoint
  int64_t labelled_keypoints = 0;
  int64_t corrupt_images = -1;  // files that did not decode; -1: not checked
  std::vector<std::string> corrupt_examples;
  RecordStats records;
};

// Whether the image file at a path decodes.
using ImageCheck = std::function<bool(const std::string& path)>;

// With `decodes`, every image is decoded (slow on big sets) to count the corrupt files.
SplitStats compute_stats(const Records& records, const DatasetInfo& info,
                         const ImageCheck& decodes = {});

// The text report `detrain data stats` prints.
std::string format_stats(const SplitStats& stats, const DatasetInfo& info,
                         const std::string& split);

}  // namespace detrain::data
