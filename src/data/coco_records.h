// COCO instances / person-keypoints JSON -> plain per-image records (no tensors): the file is
// read by coco/'s annotation reader, the evaluator's too, and the records are built from its
// table. Differs from the reference's convert_coco + txt labels: boxes stay in xyxy pixels of
// the original image, crowd regions are kept apart (never targets), and duplicate boxes are
// kept.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "coco/annotations.h"
#include "coco/annotations_json.h"
#include "config/data_options.h"
#include "data/dataset.h"

namespace detrain::data {

using BoxXyxy = std::array<float, 4>;  // x1, y1, x2, y2

struct ImageRecord {
  std::string file;  // absolute image path
  int64_t image_id = 0;
  int32_t width = 0;  // from the JSON `images` entry
  int32_t height = 0;
  std::vector<BoxXyxy> boxes_xyxy_px;  // [N] training targets (non-crowd), clipped to the image
  std::vector<int32_t> classes;        // [N] contiguous class index
  std::vector<float> keypoints_px;     // [N, K, 3] x, y, v (v 0 unlabelled, 1 occluded, 2 visible)
  std::vector<BoxXyxy> crowd_boxes_xyxy_px;  // iscrowd=1 regions: never targets
};

// What the scan found; a training log prints it and `detrain data stats` shows it.
struct RecordStats {
  int64_t images = 0;           // records kept
  int64_t backgrounds = 0;      // kept records without a target
  int64_t annotations = 0;      // annotations in the file
  int64_t crowd = 0;            // iscrowd=1 annotations (kept apart)
  int64_t clipped = 0;          // boxes that reached outside their image (clipped)
  int64_t dropped_empty = 0;    // boxes of zero or negative size after clipping (dropped)
  int64_t images_filtered = 0;  // dropped by keep_images
  int64_t images_missing = 0;   // files missing at scan time (with skip_missing)
  int64_t images_corrupt = 0;   // files not whole at scan time (data/image_check.h): dropped
  std::vector<std::string> missing_examples;  // first few missing paths
  double read_seconds = 0;    // reading the file (or its cache) and building the records
  std::string records_cache;  // "" (not used), "read", "written", or why it was not written
};

struct RecordOptions {
  bool check_files = true;     // stat and check every image file at scan time (image_check.h)
  bool skip_missing = false;   // missing files: drop and count instead of failing
  bool single_cls = false;     // every class becomes class 0
  double fraction = 1.0;       // keep the first round(fraction * n) records (train)
  bool cache_records = false;  // read the annotation file through its records cache

  // data.skip_missing / single_cls / cache_records, and data.fraction for the train split.
  static RecordOptions from(const config::DataOptions& data, bool train);
};

struct Records {
  std::vector<ImageRecord> images;  // in the JSON's `images` order
  RecordStats stats;
};

// Parses `split`'s annotation file of `info`. Throws DataError: malformed JSON (file and byte
// offset), an annotation whose category id the descriptor does not list (annotation id and
// image id), an annotation of an unknown image, missing files (the first few paths, unless
// skip_missing), and IoError when the file cannot be read.
Records load_records(const DatasetInfo& info, const std::string& split,
                     const RecordOptions& options = {});

// The same from JSON text already in memory (tests); `source` names it in errors.
Records parse_records(const std::string& json_text, const std::string& source,
                      const DatasetInfo& info, const SplitFiles& files,
                      const RecordOptions& options = {});

// How the loader reads `info`'s annotation files: image file names and positive sizes, a bbox
// on every annotation, and exactly the descriptor's K keypoints where an annotation has them
// (keypoints skipped for detection).
coco::ReadOptions record_read_options(const DatasetInfo& info);

// `split`'s annotation file of `info` read with `read` (record_read_options(info), or more),
// through its records cache (data/cache_files.h, coco/table_cache.h) when `cache_records`.
// Throws DataError naming the descriptor and split when the file is missing.
// `cache_use`, when given, receives RecordStats::records_cache's text.
coco::AnnotationTable read_split(const DatasetInfo& info, const std::string& split,
                                 const coco::ReadOptions& read, bool cache_records = false,
                                 std::string* cache_use = nullptr);

// The records of a table read with record_read_options(info) (further requirements allowed,
// e.g. the evaluator's categories: validation reads its split once for both). Throws DataError
// as load_records does; std::invalid_argument for a table read without image files or with
// another K.
Records build_records(const coco::AnnotationTable& table, const DatasetInfo& info,
                      const SplitFiles& files, const RecordOptions& options = {});

}  // namespace detrain::data
