// The training criterion the trainer calls: built from the head's options, `loss.*` and the
// data set's OKS sigmas, it runs the detection (and keypoint) loss on each branch, combines
// the one-to-many and one-to-one branches for end-to-end heads, and returns a named
// breakdown. Like the reference, `total` is the sum of the items times the batch size, and
// for end-to-end heads the logged items are the one-to-one branch's. Unlike it, the loss is
// always computed in float32 (autocast off, reduced-precision outputs cast up).
#pragma once

#include <torch/torch.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "config/loss_options.h"
#include "loss/detection_loss.h"
#include "loss/end2end_loss.h"
#include "loss/keypoint_loss.h"
#include "loss/targets.h"
#include "model/heads.h"

namespace detrain::loss {

// One branch's outcome, kept for logs and parity tests.
struct BranchReport {
  std::string name;                 // "one2many" / "one2one"
  torch::Tensor items;              // [n] detached, gains applied, not x batch size
  torch::Tensor fg_mask;            // [B, A] bool
  torch::Tensor target_gt_idx;      // [B, A] int64
  torch::Tensor target_scores_sum;  // scalar, before the max(., 1) clamp
};

struct LossResult {
  torch::Tensor total;             // scalar with graph: what is backpropagated
  torch::Tensor vector;            // [n] with graph: items x batch size (E2E: weighted branches)
  torch::Tensor items;             // [n] detached, what the trainer logs
  std::vector<std::string> names;  // one per item, e.g. {"box", "cls", "l1"}
  std::vector<BranchReport> branches;
};

class Criterion {
 public:
  Criterion(const model::HeadOptions& head, const config::LossOptions& options,
            torch::Tensor sigmas, model::RealNVP flow);

  // imgsz_hw: the network input (height, width) in pixels; must match the feature maps.
  LossResult operator()(const model::TrainOutput& output, const Targets& targets,
                        std::array<int64_t, 2> imgsz_hw) const;

  // Data-parallel training: detection normalisers become global and `total` is multiplied by
  // the world size (as the reference's DDP does), so averaging the ranks' gradients gives the
  // gradient of the global batch's loss. Keypoint terms stay means over this rank's instances.
  void set_replicas(Replicas replicas) { replicas_ = std::move(replicas); }
  const Replicas& replicas() const { return replicas_; }

  // Sets the end-to-end weights for training epoch `epoch` (0-based) of `epochs`.
  void set_epoch(int64_t epoch, int64_t epochs);
  End2EndWeights weights() const { return weights_; }
  const std::vector<std::string>& names() const { return names_; }

 private:
  struct Branch {
    DetectionLoss detection;
    std::unique_ptr<KeypointLoss> keypoints;
  };
  // Items of one branch in `names_` order (gains applied, not x batch size), with graph.
  torch::Tensor branch_vector(const Branch& branch, const model::BranchOutput& output,
                              const std::vector<torch::Tensor>& feats, const PaddedTargets& gt,
                              BranchReport& report) const;

  model::HeadOptions head_;
  config::LossOptions options_;
  std::vector<Branch> branches_;  // one2many, then one2one for end-to-end heads
  std::vector<std::string> names_;
  End2EndWeights weights_;
  Replicas replicas_;
};

// OKS sigmas as a [K] float tensor: `sigmas` when given, else the reference's defaults (the
// COCO values for 17 keypoints, 1/K otherwise).
torch::Tensor oks_sigmas(int64_t num_keypoints, const std::vector<double>& sigmas = {});

// The criterion for a model head. `flow` (the head's RealNVP) is required for YOLO26 pose
// heads, which add the RLE term; other heads ignore it.
std::unique_ptr<Criterion> make_criterion(const model::HeadOptions& head,
                                          const config::LossOptions& options,
                                          const std::vector<double>& sigmas = {},
                                          model::RealNVP flow = nullptr);

}  // namespace detrain::loss
