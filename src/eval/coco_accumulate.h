// accumulate() for one category: pycocotools' precision/recall at every (IoU threshold, recall
// threshold, area range, maxDets), computed from the per-cell match outcomes. The category's
// detections are sorted once (score descending, then image, then rank in the cell: the order of
// numpy's stable sort); each maxDets is the subsequence of ranks below it.
#pragma once

#include <cstdint>
#include <vector>

#include "eval/coco_match.h"
#include "eval/coco_score_sort.h"
#include "eval/coco_types.h"

namespace detrain::eval {

// One cell of the category, images ascending.
struct AccumulateCell {
  int64_t slot_begin = 0;         // the cell's first slot (its position in CellTable::dt_*)
  int32_t num_slots = 0;          // detections kept, score-sorted
  const int32_t* npig = nullptr;  // [A] non-ignored GTs per area range
};

struct AccumulateInput {
  const double* slot_score = nullptr;                      // per slot: CellTable::dt_score
  const OutcomeWord* outcome = nullptr;                    // match_cell outcome bits per slot
  const std::vector<double>* iou_thresholds = nullptr;     // T
  const std::vector<double>* recall_thresholds = nullptr;  // R
  const std::vector<int64_t>* max_dets = nullptr;          // M, ascending
  int num_areas = 0;                                       // A
};

// One (area range, maxDets) walk of the sorted detections: for each threshold, the TP and
// partly-ignored counts so far and the FP count and score at each TP event.
struct AccumulateWalk {
  bool active = false;               // the area range has non-ignored GTs and this maxDets is new
  int64_t npig = 0;                  // non-ignored GTs of the area range
  int64_t detections = 0;            // nd: kept detections, ignored ones included
  double first_score = 0;            // score of the first kept detection
  size_t stride = 0;                 // row length of fp_at_tp / score_at_tp
  std::vector<int64_t> tp, ignored;  // [T] counts so far
  std::vector<int64_t> fp_at_tp;     // [T, stride]
  std::vector<double> score_at_tp;   // [T, stride]
};

struct AccumulateScratch {
  std::vector<ScoredSlot> entries;
  ScoreSortScratch sort;
  std::vector<AccumulateWalk> walks;  // [A, M]
  std::vector<int64_t> kept_count;    // [M] detections each maxDets keeps
  // A detection's class is the first maxDets that keeps it (every later one does too). Counts
  // so far per class: detections [M], and those ignored at every threshold of a word, per area
  // range [A, W, M]. A walk's count is the sum over the classes up to its maxDets.
  std::vector<int64_t> class_count, every_count;
  std::vector<int64_t> recall_count;   // [R] TPs needed to reach each recall threshold
  std::vector<OutcomeWord> word_mask;  // [W] bits of the thresholds in each word
  std::vector<double> precision_max;   // [npig + 2]
  std::vector<double> precision_block, scores_block, recall_block;  // one category's output
};

// Writes one category's precision and scores as [A, M, T, R] and recall as [A, M, T] (the
// caller scatters them into pycocotools' [T, R, K, A, M]); every entry is written, -1 for an
// area range without non-ignored GTs.
void accumulate_category(const AccumulateInput& in, const AccumulateCell* cells, size_t num_cells,
                         double* precision, double* recall, double* scores,
                         AccumulateScratch& scratch);

}  // namespace detrain::eval
