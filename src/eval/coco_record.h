// One COCO results record (what predictions.json holds and what validation scores) and the
// rounding applied when records are made. Plain data: inference produces records, the
// evaluator and the predictions writer consume them.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace detrain::eval {

struct CocoRecord {
  int64_t image_id = 0;
  int64_t category_id = 0;
  std::array<double, 4> bbox{};  // x, y (top-left), width, height in original pixels
  double score = 0;
  std::vector<double> keypoints;  // [K * 3] x, y, visibility score; empty without keypoints
};

// Decimal places written to results (the reference rounds boxes to 3, scores to 5); -1 keeps
// full precision. Rounding happens in the records, so in-memory evaluation and evaluation of
// the written file see the same numbers.
struct RecordRounding {
  int box_decimals = 3;
  int score_decimals = 5;
  int keypoint_decimals = 3;
};

}  // namespace detrain::eval
