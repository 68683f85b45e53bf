// Task-aligned label assignment (the reference's TaskAlignedAssigner in tal.py): candidates
// inside the gt (sides under the second stride widened to it), metric
// score^alpha * CIoU^beta, top-k per gt, conflicts to the highest CIoU, optional top-k2 pass
// (one-to-one), soft targets. With keypoints it is PoseTaskAlignedAssigner (YOLO26 pose):
// the overlap is keypoint OKS and candidates are gated by pyramid level. Differs in memory only:
// images in groups and candidate pairs in chunks of gts, so thousands of gts x 8400 anchors stay
// within a few hundred MB.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace detrain::loss {

struct AssignerOptions {
  int64_t topk = 10;
  int64_t topk2 = 0;  // second pass among survivors per gt (one-to-one: 1); 0 = off
  int64_t num_classes = 80;
  double alpha = 0.5;
  double beta = 6.0;
  double eps = 1e-9;
  std::vector<int64_t> strides{8, 16, 32};
  // Upper bound on (images x gts x anchors) handled at once when finding candidates.
  int64_t chunk_pairs = int64_t{1} << 21;
  // Images are assigned in groups whose dense [g, M, A] tensors hold at most this many
  // elements (one image at least, whatever its size).
  int64_t dense_elements = int64_t{1} << 24;
};

struct Assignment {
  torch::Tensor target_labels;  // [B, A] int64 class (background: that of gt row 0)
  torch::Tensor target_bboxes;  // [B, A, 4] xyxy px (background: gt row 0's box)
  torch::Tensor target_scores;  // [B, A, C] soft one-hot, 0 for background
  torch::Tensor fg_mask;        // [B, A] bool
  torch::Tensor target_gt_idx;  // [B, A] int64 gt row within the image, 0 for background
};

// PoseTaskAlignedAssigner's inputs. The overlap of a (gt, anchor) pair is the OKS of the
// anchor's predicted keypoints (area = 0.53 * box w * h, as the pose validator's) for a gt with
// a labelled keypoint, its CIoU otherwise. A gt is a candidate only on levels of stride s with
// level_lo * s <= sqrt(w * h) <= level_hi * s (the finest level open below, the coarsest above),
// and on every level when that leaves it no candidate.
struct KeypointOverlap {
  torch::Tensor pred_kpts_px;    // [B, A, K, 2] decoded predictions, detached
  torch::Tensor gt_kpts_px;      // [B, M, K, 3]: visibility > 0 is labelled ([B, M, K, 2]: all)
  torch::Tensor sigmas;          // [K] OKS sigmas
  torch::Tensor anchor_strides;  // [A] stride of each anchor's level
  double level_lo = 2.0, level_hi = 12.0;
};

// pd_scores [B, A, C] probabilities; pd_bboxes [B, A, 4] xyxy px; anchor_points_px [A, 2];
// gt_labels [B, M, 1]; gt_bboxes [B, M, 4] xyxy px; mask_gt [B, M, 1] 1 for real rows;
// keypoints: the pose assigner's inputs, or null for box CIoU. No gradient flows through the
// result.
Assignment assign(const AssignerOptions& options, const torch::Tensor& pd_scores,
                  const torch::Tensor& pd_bboxes, const torch::Tensor& anchor_points_px,
                  const torch::Tensor& gt_labels, const torch::Tensor& gt_bboxes,
                  const torch::Tensor& mask_gt, const KeypointOverlap* keypoints = nullptr);

}  // namespace detrain::loss
