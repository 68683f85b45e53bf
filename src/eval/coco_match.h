// Per-cell work of the evaluator: the D x G similarity matrix (box IoU as maskApi's bbIou, OKS
// as COCOeval.computeOks, same operation order) and pycocotools' greedy matcher (evaluateImg)
// for every area range and IoU threshold, reusing one matrix for all area ranges.
#pragma once

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "eval/coco_types.h"

namespace detrain::eval {

// What a detection counts as at each IoU threshold of one area range, as two bit sets (bit t of
// word t / 16): true positive, or ignored (neither TP nor FP); otherwise a false positive. 16-bit
// words hold COCO's 10 thresholds in one word with little waste: this array is the largest the
// evaluator keeps per detection.
using OutcomeWord = uint16_t;
constexpr int kOutcomeWordBits = 16;
// Words per bit set for T thresholds.
inline int outcome_words(size_t num_thresholds) {
  return static_cast<int>((num_thresholds + kOutcomeWordBits - 1) / kOutcomeWordBits);
}
// Layout of one cell's outcomes: for detection d and area range a, 2 * W words starting at
// ((d * A + a) * 2 * W): W words of true-positive bits, then W words of ignored bits.
inline size_t outcome_offset(size_t d, size_t a, size_t num_areas, int words) {
  return (d * num_areas + a) * 2 * static_cast<size_t>(words);
}

// The G ground truths of one cell, in pycocotools' order.
struct CellGts {
  int count = 0;
  const BoxXywh* box = nullptr;
  const double* area = nullptr;
  const uint8_t* crowd = nullptr;
  const uint8_t* ignore = nullptr;      // iscrowd (or num_keypoints == 0 for keypoints)
  const uint8_t* id_is_zero = nullptr;  // matched det then reads as unmatched (pycocotools)
};

// The D detections of one cell, sorted by score (stable) and cut to maxDets[-1].
struct CellDets {
  int count = 0;
  const BoxXywh* box = nullptr;
  const double* area = nullptr;
};

// ious[d * G + g] = bbIou(det d, gt g): intersection over union, or over the detection's area
// for a crowd GT; 0 when the boxes only touch.
void box_ious(const CellDets& dets, const CellGts& gts, double* ious);

// Keypoint inputs of one cell: [*, K, 3] rows; GT rows include their boxes for the k1 == 0
// fallback (distance to the box enlarged by its own size on each side).
struct CellKeypoints {
  int num_keypoints = 0;               // K
  const double* variances = nullptr;   // [K] (2 * sigma)^2
  std::vector<const double*> gt_rows;  // [G] -> [K, 3]
  std::vector<const double*> dt_rows;  // [D] -> [K, 3]
};
// ious[d * G + g] = OKS(det d, gt g). A pair whose OKS is provably below `floor` may get 0
// instead of its exact value: with `floor` the lowest IoU threshold, the matcher never tells
// them apart (it only takes values at or above a threshold), and most pairs of a crowded image
// are far apart, so most exp() calls are skipped. The default computes every value exactly.
void keypoint_oks(const CellKeypoints& kps, const CellGts& gts, int num_dets, double* ious,
                  double floor = -HUGE_VAL);

// The matcher's per-parameter constants, computed once per evaluation.
struct MatchSetup {
  std::vector<double> thresholds;  // min(t, 1 - 1e-10), as evaluateImg clamps them
  double lowest_threshold = 0;
  std::vector<AreaRange> areas;
  int words = 0;                      // outcome words per bit set
  std::vector<OutcomeWord> all_bits;  // [W] every threshold's bit
};
MatchSetup make_match_setup(const std::vector<double>& iou_thresholds,
                            const std::vector<AreaRange>& areas);

// A GT within a detection's reach (IoU at or above the lowest threshold).
struct RankedGt {
  double iou;
  int gt;
};

struct MatchScratch {
  std::vector<double> best_iou;
  std::vector<int> candidates;
  std::vector<RankedGt> ranked;   // per candidate, its reachable GTs in the matcher's preference
  std::vector<int> ranked_begin;  // [candidates + 1] offsets into ranked
  std::vector<uint8_t> gt_ignored;
  std::vector<int32_t> gt_order;
  std::vector<uint8_t> gt_matched;
  std::vector<std::pair<int, int>> matches;  // (detection, GT) at one threshold
};

// Runs evaluateImg's matcher for every area range a and threshold t. Writes the outcome bits
// (layout: outcome_offset) and the number of non-ignored GTs per area range, npig[a].
void match_cell(const CellGts& gts, const CellDets& dets, const double* ious,
                const MatchSetup& setup, OutcomeWord* outcome, int32_t* npig,
                MatchScratch& scratch);

// match_cell for a cell without ground truth (most cells of a results file: every detection is
// a false positive, or ignored outside an area range), without the matrix or the matcher's
// scratch; the same outcome bits. `dets.box` is not read.
void match_cell_without_gts(const CellDets& dets, const MatchSetup& setup, OutcomeWord* outcome,
                            int32_t* npig);

}  // namespace detrain::eval
