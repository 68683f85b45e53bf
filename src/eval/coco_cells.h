// Internal to the evaluator: ground truth and detections grouped into (image, category) cells in
// exactly pycocotools' order (GT: image ids ascending, file order inside; dets: file order),
// visiting only occupied cells. Cells are stored category-major so accumulate() reads each
// category's matches from one contiguous block.
#pragma once

#include <cstdint>
#include <vector>

#include "eval/coco_eval.h"
#include "eval/coco_memory.h"
#include "eval/coco_types.h"

namespace detrain::eval {

// int64 id -> int32 position (open addressing). With repeated keys the last one wins.
class IdLookup {
 public:
  IdLookup() = default;
  explicit IdLookup(const std::vector<int64_t>& keys);
  int32_t find(int64_t key) const {
    if (mask_ == 0) return -1;
    for (uint64_t slot = hash(key) & mask_;; slot = (slot + 1) & mask_) {
      const int32_t value = values_[slot];
      if (value < 0 || keys_[slot] == key) return value;
    }
  }
  size_t size() const { return size_; }

 private:
  static uint64_t hash(int64_t key) {
    uint64_t x = static_cast<uint64_t>(key) * 0x9e3779b97f4a7c15ULL;
    return x ^ (x >> 29);
  }
  std::vector<int64_t> keys_;
  std::vector<int32_t> values_;
  uint64_t mask_ = 0;
  size_t size_ = 0;
};

// Ground truth prepared once per evaluator: lookups and the evaluated GT entries (an annotation
// may appear twice when its id is repeated, as pycocotools' id-keyed lookups make it) in cell
// order (see Cell), per-entry fields gathered for the matcher.
struct GtIndex {
  std::vector<int64_t> image_ids;     // evaluated images, ascending
  std::vector<int64_t> category_ids;  // evaluated categories, ascending
  IdLookup all_images;                // every GT image, ascending (results must name one)
  IdLookup gt_categories;    // every GT category, ascending (others are dropped and counted)
  IdLookup eval_images;      // -> index into image_ids
  IdLookup eval_categories;  // -> index into category_ids
  // Without explicit image/category lists the evaluated sets are all of the GT's, and one
  // lookup gives both answers.
  bool images_are_all = true;
  bool categories_are_all = true;

  std::vector<int32_t> entry_image;          // image index per entry
  std::vector<int32_t> entry_cell_category;  // category index (0 for all when pooled)
  std::vector<int32_t> entry_annotation;     // annotation index per entry
  std::vector<BoxXywh> box;
  std::vector<double> area;
  std::vector<uint8_t> crowd;
  std::vector<uint8_t> ignore;      // iscrowd, or num_keypoints == 0 for keypoints
  std::vector<uint8_t> id_is_zero;  // a match to GT id 0 reads as "unmatched" in pycocotools
};

// Throws DataError naming the annotation id when an evaluated annotation lacks a field.
GtIndex build_gt_index(const CocoGroundTruth& gt, const CocoParams& params);

// An (image, category) pair holding a GT or a detection; with use_cats off, an image holding
// any (categories pooled in ascending order). Cells are ordered by category, then image.
struct Cell {
  int32_t image = 0;                 // index into GtIndex::image_ids
  int32_t category = 0;              // index into the arrays' K (0 with use_cats = false)
  int32_t gt_begin = 0, gt_end = 0;  // GtIndex entries
  int32_t dt_begin = 0, dt_end = 0;  // CellTable::dt_* (fewer than 2^31: dt_index is int32)
  // Detections kept after the maxDets cut: the first num_slots of the cell's, once the cell phase
  // has sorted them by score. A detection's slot (for the outcomes) is its position in dt_*.
  int32_t num_slots = 0;
};

struct CellTable {
  std::vector<Cell> cells;              // category-major, images ascending inside
  std::vector<int32_t> category_begin;  // [K + 1] cell ranges per category
  // Detections in cell order, fields gathered for locality: file order inside a cell until the
  // cell phase sorts each cell's by score (stable), in place.
  FillBuffer<int32_t> dt_index;  // index into CocoDetections
  FillBuffer<double> dt_score;
  FillBuffer<double> dt_area;
};

// Frees the per-detection fields that only the cell phase reads (dt_index, dt_area); cells,
// category ranges and scores stay for accumulate().
void release_matching_fields(CellTable& table);

// Groups detections into cells. Throws DataError for a result whose image is not in the ground
// truth or whose score/box is NaN; counts results of unknown categories.
CellTable build_cells(const GtIndex& index, const CocoDetections& dets, const CocoParams& params,
                      int threads, CocoEvalCounts& counts);

}  // namespace detrain::eval
