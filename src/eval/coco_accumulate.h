// accumulate() for one category: pycocotools' precision/recall at every (IoU threshold, recall
// threshold, area range, maxDets), computed from the per-cell match outcomes. The category's
// detections are sorted once (score descending, then image, then rank in the cell: the order of
// numpy's stable sort); each maxDets is the subsequence of ranks below it.
#pragma once

#include <cstdint>
#include <vector>

#include "eval/coco_match.h"
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
  const OutcomeWord* outcome = nullptr;                    // match_cell outcome bits per slot
  const std::vector<double>* iou_thresholds = nullptr;     // T
  const std::vector<double>* recall_thresholds = nullptr;  // R
  const std::vector<int64_t>* max_dets = nullptr;          // M, ascending
  int num_areas = 0;                                       // A
};

struct AccumulateScratch {
  struct Entry {
    double score;
    uint32_t slot;  // slots run in (image, rank) order within a category
    uint32_t rank;
  };
  std::vector<Entry> entries;
  std::vector<Entry> radix_buffer;
  std::vector<OutcomeWord> sorted_bits;     // [A, n, 2W] outcome bits of `entries`, in their order
  std::vector<double> sorted_score;         // [n]
  std::vector<std::vector<uint32_t>> kept;  // [M] sorted positions under each maxDets
  std::vector<int64_t> recall_count;        // [R] TPs needed to reach each recall threshold
  std::vector<int64_t> tp, ignored;         // [T] counts so far in a walk
  std::vector<int64_t> ignored_all;         // [W] detections ignored at every threshold of a word
  std::vector<OutcomeWord> word_mask;       // [W] bits of the thresholds in each word
  std::vector<int64_t> fp_at_tp;            // [T, npig + 1]
  std::vector<double> score_at_tp;          // [T, npig + 1]
  std::vector<double> precision_max;        // [npig + 2]
  std::vector<double> precision_block, scores_block, recall_block;  // one category's output
};

// Writes one category's precision and scores as [A, M, T, R] and recall as [A, M, T] (the
// caller scatters them into pycocotools' [T, R, K, A, M]). Entries of an (a, m) without GT stay
// as they are (the caller fills -1).
void accumulate_category(const AccumulateInput& in, const AccumulateCell* cells, size_t num_cells,
                         double* precision, double* recall, double* scores,
                         AccumulateScratch& scratch);

}  // namespace detrain::eval
