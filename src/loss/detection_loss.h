// The detection loss of one head branch (the reference's v8DetectionLoss): task-aligned
// assignment, BCE classification over all anchors normalised by the target-score sum, CIoU box
// loss weighted by target scores, and DFL (reg_max > 1) or the image-normalised L1 ltrb term
// (reg_max 1) in the third slot. Gains applied; scaling by batch size is the caller's.
#pragma once

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "common/replicas.h"
#include "loss/assigner.h"
#include "loss/targets.h"
#include "model/heads.h"

namespace detrain::loss {

struct DetectionGains {
  double box = 7.5, cls = 0.5, dfl = 1.5;
};

// One branch's terms with their graphs, plus what the keypoint loss and the tests reuse.
struct DetectionTerms {
  torch::Tensor box, cls, dfl;      // scalars, gains applied
  Assignment assignment;            // target_bboxes in input pixels
  torch::Tensor target_scores_sum;  // scalar, before the max(., 1) clamp
  torch::Tensor anchor_points;      // [A, 2] grid units
  torch::Tensor stride_tensor;      // [A, 1]
};

// What the pose assigner (YOLO26 pose) needs from the keypoint loss: the decoded keypoint
// predictions in pixels for given anchors ([A, 2] grid units, strides [A, 1]) -> [B, A, K, 2]
// detached, and the OKS sigmas. The gt keypoints come with the targets.
struct AssignerKeypoints {
  std::function<torch::Tensor(const torch::Tensor& anchor_points, const torch::Tensor& strides)>
      predicted_px;
  torch::Tensor sigmas;  // [K]
};

class DetectionLoss {
 public:
  DetectionLoss(int64_t reg_max, AssignerOptions assigner, DetectionGains gains);

  // branch: raw outputs ([B, 4*reg_max, A] boxes, [B, nc, A] scores); feats: the head inputs
  // (for anchors and the input size); gt: padded targets in input pixels. With active
  // `replicas`, the target-score normaliser is the global one (max(sum over ranks, 1) / world),
  // so the ranks' terms add up to the single-process loss of the global batch. With
  // `keypoints` the assignment is the pose assigner's (OKS overlap, level gate).
  DetectionTerms operator()(const model::BranchOutput& branch,
                            const std::vector<torch::Tensor>& feats, const PaddedTargets& gt,
                            const Replicas& replicas = {},
                            const AssignerKeypoints* keypoints = nullptr) const;

  const AssignerOptions& assigner() const { return assigner_; }

 private:
  // [B, A, 4*reg_max] -> [B, A, 4] ltrb distances (DFL expectation when reg_max > 1).
  torch::Tensor decode_distances(const torch::Tensor& pred_dist) const;

  int64_t reg_max_;
  AssignerOptions assigner_;
  DetectionGains gains_;
};

// DFL: cross-entropy on the two bins around each target distance (clamped to
// [0, reg_max - 1.01]), weighted linearly, mean over the four sides.
// pred [n * 4, reg_max] logits, target [n, 4] grid units -> [n, 1].
torch::Tensor dfl_loss(const torch::Tensor& pred, const torch::Tensor& target, int64_t reg_max);

// Input size (height, width) in pixels implied by the first feature map and stride.
std::array<int64_t, 2> input_size_hw(const std::vector<torch::Tensor>& feats, int64_t stride);

}  // namespace detrain::loss
