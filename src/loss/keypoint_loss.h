// Keypoint terms of the pose losses: the OKS-shaped location loss with per-data-set sigmas,
// the visibility BCE (kobj), and YOLO26's RLE term through the head's RealNVP flow. Decoding
// follows the head: YOLO11 (v8PoseLoss) raw * 2 + anchor - 0.5, YOLO26 (PoseLoss26) raw +
// anchor, both in grid units. Gains applied; scaling by batch size is the caller's.
#pragma once

#include <torch/torch.h>

#include <array>
#include <optional>
#include <vector>

#include "loss/detection_loss.h"
#include "loss/targets.h"
#include "model/heads.h"

namespace detrain::loss {

// Mean over (anchor, keypoint) of [K / #labelled] * (1 - exp(-d / (8 sigma^2 (area + 1e-9))))
// on labelled keypoints. pred, gt [n, K, >= 2] grid units; labelled [n, K] bool; area [n, 1]
// gt box w*h in grid units; sigmas [K].
torch::Tensor oks_location_loss(const torch::Tensor& pred, const torch::Tensor& gt,
                                const torch::Tensor& labelled, const torch::Tensor& area,
                                const torch::Tensor& sigmas);

// RLE over labelled keypoints: sigma = sigmoid(sigma logits), error = (pred - gt) / sigma,
// loss = log sigma - log phi(error) + log 2 sigma + |error| per coordinate, times the joint
// weight (float64, multiplied in place as the reference does), / rows, summed.
// pred [n, K, D + 2] (last two: sigma logits), gt [n, K, >= 2], labelled [n, K],
// joint_weights [K] float64. Rows with NaN/Inf errors are dropped; 0 when none is left.
torch::Tensor rle_loss(const torch::Tensor& pred, const torch::Tensor& gt,
                       const torch::Tensor& labelled, const torch::Tensor& joint_weights,
                       model::RealNVPImpl& flow);

// The reference's per-joint RLE weights for the 17 COCO keypoints (1.0 head, shoulders and
// hips; 1.2 elbows and knees; 1.5 wrists and ankles), ones otherwise. [K] float64.
torch::Tensor rle_joint_weights(int64_t num_keypoints);

struct KeypointGains {
  double pose = 12.0, kobj = 1.0, rle = 1.0;
};

struct KeypointTerms {
  torch::Tensor pose, kobj, rle;  // scalars, gains applied (rle undefined without a flow)
};

class KeypointLoss {
 public:
  // yolo26: PoseLoss26 decoding (and RLE when `flow` is given); else v8PoseLoss.
  KeypointLoss(std::array<int64_t, 2> kpt_shape, torch::Tensor sigmas, bool yolo26,
               model::RealNVP flow, KeypointGains gains);

  KeypointTerms operator()(const model::BranchOutput& branch, const DetectionTerms& detection,
                           const PaddedTargets& gt) const;

  bool has_rle() const { return !flow_.is_empty(); }

  // PoseLoss26 assigns with the pose assigner (Ultralytics 8.4.190): its inputs for this
  // branch's keypoint predictions; nullopt for v8PoseLoss, which assigns by box CIoU.
  std::optional<AssignerKeypoints> assigner_keypoints(const model::BranchOutput& branch) const;

 private:
  torch::Tensor decode(const torch::Tensor& raw, const torch::Tensor& anchor_points) const;
  // [B, C, A] keypoint channels -> [B, A, K, D].
  torch::Tensor per_anchor(const torch::Tensor& kpts) const;

  std::array<int64_t, 2> kpt_shape_;
  torch::Tensor sigmas_;         // [K] float
  torch::Tensor joint_weights_;  // [K] float64
  bool yolo26_;
  model::RealNVP flow_;
  KeypointGains gains_;
};

}  // namespace detrain::loss
