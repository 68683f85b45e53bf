// accumulate() for one category: pycocotools' precision/recall at every (IoU threshold, recall
// threshold, area range, maxDets), computed from the per-cell match outcomes. The category's
// detections are sorted once (score descending, then image, then rank in the cell: the order of
// numpy's stable sort); each maxDets is the subsequence of ranks below it.
#pragma once

#include <cstdint>
#include <vector>

#include "eval/coco_types.h"

namespace detrain::eval {

// One cell of the category, images ascending.
struct AccumulateCell {
  int64_t slot_begin = 0;         // into slot_score / outcome
  int32_t num_slots = 0;          // detections kept, score-sorted
  const int32_t* npig = nullptr;  // [A] non-ignored GTs per area range
};

struct AccumulateInput {
  const double* slot_score = nullptr;                      // [S]
  const uint8_t* outcome = nullptr;                        // [S, A, T] DetOutcome
  const std::vector<double>* iou_thresholds = nullptr;     // T
  const std::vector<double>* recall_thresholds = nullptr;  // R
  const std::vector<int64_t>* max_dets = nullptr;          // M, ascending
  int num_areas = 0;                                       // A
  int num_categories = 0;                                  // K of the output arrays
};

struct AccumulateScratch {
  struct Entry {
    double score;
    int32_t cell;
    int32_t rank;
    int64_t slot;
  };
  std::vector<Entry> entries;
  std::vector<int64_t> recall_count;  // [R] TPs needed to reach each recall threshold
  std::vector<int64_t> tp, fp;        // [T]
  std::vector<int64_t> fp_at_tp;      // [T, npig + 1]
  std::vector<double> score_at_tp;    // [T, npig + 1]
  std::vector<double> precision_max;  // [npig + 2]
};

// Writes precision/scores [T, R, K, A, M] and recall [T, K, A, M] for category index k; entries
// of a (k, a, m) without GT stay as they are (the caller fills -1 first).
void accumulate_category(const AccumulateInput& in, const AccumulateCell* cells, size_t num_cells,
                         int k, double* precision, double* recall, double* scores,
                         AccumulateScratch& scratch);

}  // namespace detrain::eval
