// Per-cell work of the evaluator: the D x G similarity matrix (box IoU as maskApi's bbIou, OKS
// as COCOeval.computeOks, same operation order) and pycocotools' greedy matcher (evaluateImg)
// for every area range and IoU threshold, reusing one matrix for all area ranges.
#pragma once

#include <cstdint>
#include <vector>

#include "eval/coco_types.h"

namespace detrain::eval {

// What a detection counts as at one (area range, IoU threshold).
enum DetOutcome : uint8_t { kFalsePositive = 0, kTruePositive = 1, kIgnored = 2 };

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
// ious[d * G + g] = OKS(det d, gt g).
void keypoint_oks(const CellKeypoints& kps, const CellGts& gts, int num_dets, double* ious);

struct MatchScratch {
  std::vector<double> best_iou;
  std::vector<uint8_t> gt_ignored;
  std::vector<int32_t> gt_order;
  std::vector<uint8_t> gt_matched;
};

// Runs evaluateImg's matcher for every area range a and threshold t. Writes
// outcome[(d * A + a) * T + t] and the number of non-ignored GTs per area range, npig[a].
void match_cell(const CellGts& gts, const CellDets& dets, const double* ious,
                const std::vector<double>& iou_thresholds, const std::vector<AreaRange>& areas,
                uint8_t* outcome, int32_t* npig, MatchScratch& scratch);

}  // namespace detrain::eval
