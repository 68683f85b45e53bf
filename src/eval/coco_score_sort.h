// Internal to the evaluator: the stable descending score sorts, numpy's stable argsort of -score:
// of one cell's detections (evaluateImg's) and of one category's (accumulate()'s, over the
// concatenated cells).
#pragma once

#include <cstddef>
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

struct CellSortScratch {
  std::vector<int32_t> order, index;
  std::vector<double> score, area;
};

// Sorts a cell's n detections, given as three parallel arrays, in place by score, largest first;
// equal scores keep their order.
void sort_cell_by_score(int32_t* index, double* score, double* area, size_t n,
                        CellSortScratch& scratch);

}  // namespace detrain::eval
