// Detection and pose heads (the reference's Detect, Pose and Pose26) with their one-to-one
// branch, the RealNVP flow of the RLE keypoint loss, bias initialisation, decoding and the
// end-to-end top-k. Deliberate differences: the one-to-one towers are built as copies of the
// one-to-many towers by copying parameters (same result as deepcopy), and fuse() keeps the
// keypoint head of a Pose26 without end2end (the reference drops it and then cannot run).
#pragma once

#include <torch/torch.h>

#include <array>
#include <string>
#include <vector>

#include "model/layers.h"

namespace detrain::model {

enum class HeadKind { kDetect, kPose, kPose26 };

struct HeadOptions {
  HeadKind kind = HeadKind::kDetect;
  int64_t nc = 80;
  int64_t reg_max = 16;  // 1: raw ltrb distances; > 1: DFL bins per side
  bool end2end = false;  // add the one-to-one branch (top-k inference without NMS)
  bool legacy = false;   // v8-style cls tower (two 3x3 Convs) instead of depthwise pairs
  std::array<int64_t, 2> kpt_shape{17, 3};  // keypoints, values per keypoint (2 or 3)
  std::vector<int64_t> channels;            // input channels per level (P3, P4, P5)
  std::vector<int64_t> strides;             // stride per level (8, 16, 32)
  int64_t cls_width = 0;                    // class tower width; 0: max(channels[0], min(nc, 100))

  bool pose() const { return kind != HeadKind::kDetect; }
  int64_t num_keypoint_values() const { return kpt_shape[0] * kpt_shape[1]; }
};

// Raw outputs of one branch, anchors of all levels concatenated (A = sum of H_i * W_i, level by
// level, row-major inside a level). Tensors a model does not produce are undefined.
struct BranchOutput {
  torch::Tensor boxes;       // [B, 4*reg_max, A] ltrb: raw distances in grid units (reg_max 1)
                             //   or DFL logits, channel = side * reg_max + bin
  torch::Tensor scores;      // [B, nc, A] class logits
  torch::Tensor kpts;        // [B, K*3, A] raw keypoints, channel = k*3 + (x, y, visibility logit)
  torch::Tensor kpts_sigma;  // [B, K*2, A] Pose26 only: raw sigma logits, channel = k*2 + (x, y)

  bool defined() const { return boxes.defined(); }
};

// What the loss consumes: the training graph of both branches plus the neck features.
struct TrainOutput {
  BranchOutput one2many;             // undefined after fuse() of an end2end model
  BranchOutput one2one;              // end2end models only; fed detached features
  std::vector<torch::Tensor> feats;  // [B, C_i, H_i, W_i] per level, the head's inputs
};

// What validation and prediction consume.
struct EvalOutput {
  // Decoded inference tensor of the branch that predicts (one2one for end2end models unless
  // the one-to-many branch is asked for): [B, 4 + nc (+ K*3), A]: boxes in input pixels (xyxy
  // for the one-to-one branch, cx,cy,w,h otherwise),
  // sigmoid class scores, then keypoints (x px, y px, visibility probability) per keypoint.
  torch::Tensor decoded;
  // end2end only: top-k rows over anchors x classes (agnostic: over anchors, each with its best
  // class), score descending, k = min(max_det, A):
  // [B, k, 6 (+ K*3)] = x1, y1, x2, y2 (px), score, class index (as float) (, keypoints).
  torch::Tensor detections;
  torch::Tensor topk_anchor_index;  // [B, k] int64 anchor of each detection row (end2end)
  TrainOutput raw;                  // raw branch outputs (no kpts_sigma) for validation losses
  bool end2end = false;             // `detections` holds the one-to-one top-k (else NMS decoded)
};

// The RealNVP flow of the RLE keypoint loss: 6 affine couplings with alternating masks over
// 2-D residuals and a standard normal prior. Buffers loc [2], cov [2, 2], mask [6, 2].
class RealNVPImpl : public torch::nn::Module {
 public:
  RealNVPImpl();
  // log density of residuals x [N, 2] under the flow -> [N]
  torch::Tensor log_prob(const torch::Tensor& x);

  torch::Tensor loc, cov, mask;

 private:
  torch::nn::ModuleList s{nullptr}, t{nullptr};
};
TORCH_MODULE(RealNVP);

class HeadImpl : public torch::nn::Module {
 public:
  explicit HeadImpl(HeadOptions options);

  // Training graph: both branches (sigma heads included), whatever the BN mode.
  TrainOutput forward_train(const std::vector<torch::Tensor>& feats);
  // Inference graph: raw branches without sigma heads, decoded tensor, and top-k when the
  // one-to-one branch predicts. `one2one`: which branch predicts for an end-to-end head (true:
  // the NMS-free one-to-one top-k; false: the one-to-many branch decoded as cx,cy,w,h for NMS,
  // what Ultralytics 8.4.190 validates by default); ignored by heads without it.
  // `agnostic`: the one-to-one top-k takes each anchor's best class only, so no anchor gives two
  // rows (8.4.190's Detect.get_topk_index under agnostic_nms=True).
  EvalOutput forward_eval(const std::vector<torch::Tensor>& feats, int64_t max_det,
                          bool one2one = true, bool agnostic = false);

  // Box bias 2.0 and class prior log(5 / nc / (640 / stride)^2) on both branches.
  void bias_init();
  // Drops training-only parts (one-to-many towers of end2end heads, sigma heads, flow).
  void fuse();
  bool fused() const { return fused_; }

  // Modules whose parameters form classification towers (cv3 and one2one_cv3).
  std::vector<const torch::nn::Module*> cls_towers() const;

  const HeadOptions& options() const { return options_; }
  RealNVP flow() const { return flow_model_; }

 private:
  struct Branch {
    torch::nn::ModuleList box{nullptr}, cls{nullptr}, pose{nullptr}, kpts{nullptr}, sigma{nullptr};
  };

  BranchOutput forward_branch(const std::vector<torch::Tensor>& feats, const Branch& branch,
                              bool with_sigma);
  // xyxy: boxes as x1,y1,x2,y2 (the one-to-one branch) or cx,cy,w,h (for NMS).
  torch::Tensor decode(const BranchOutput& branch, const std::vector<torch::Tensor>& feats,
                       bool xyxy);
  void topk(EvalOutput& out, int64_t max_det, bool agnostic) const;
  void make_towers(Branch& branch);

  HeadOptions options_;
  Branch one2many_, one2one_;
  DFL dfl_{nullptr};
  RealNVP flow_model_{nullptr};
  bool fused_ = false;
};
TORCH_MODULE(Head);

}  // namespace detrain::model
