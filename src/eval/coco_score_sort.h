// Internal to the evaluator: the stable descending sort of one category's detections by score
// that accumulate() runs (numpy's stable argsort of -score over the concatenated cells).
#pragma once

#include <cstdint>
#include <vector>

namespace detrain::eval {

// One kept detection of a category.
struct ScoredSlot {
  double score;
  uint32_t slot;  // into the match outcomes; slots run in (image, rank) order within a category
  uint32_t rank;  // position in its cell's score order (the maxDets cut)
};

struct ScoreSortScratch {
  std::vector<ScoredSlot> buffer;
  std::vector<uint32_t> bucket_begin;
};

// Sorts by score, largest first; equal scores (-0 and +0 are equal, as in numpy) keep their
// order. NaN scores are refused before this point (the cell phase rejects them).
void sort_by_score_stable(std::vector<ScoredSlot>& entries, ScoreSortScratch& scratch);

}  // namespace detrain::eval
