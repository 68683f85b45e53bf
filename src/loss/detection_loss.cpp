// Detection loss of one branch; see detection_loss.h. Follows the reference's operation order
// (assign on detached sigmoid scores and pixel boxes; box and DFL/L1 in grid units) so fp32
// results match; a branch without foreground contributes exact zeros to box and dfl.
#include "loss/detection_loss.h"

#include <optional>

#include "geometry/anchors.h"
#include "geometry/box_iou.h"
#include "geometry/box_ops.h"

namespace detrain::loss {

namespace F = torch::nn::functional;

torch::Tensor dfl_loss(const torch::Tensor& pred, const torch::Tensor& target, int64_t reg_max) {
  const auto t = target.clamp(0, static_cast<double>(reg_max) - 1 - 0.01);
  const auto left = t.to(torch::kLong), right = left + 1;  // [n, 4]
  const auto w_left = right - t, w_right = 1 - w_left;
  const auto ce = [&](const torch::Tensor& bins) {
    return F::cross_entropy(pred, bins.view({-1}),
                            F::CrossEntropyFuncOptions().reduction(torch::kNone))
        .view(bins.sizes());
  };
  return (ce(left) * w_left + ce(right) * w_right).mean(-1, true);
}

std::array<int64_t, 2> input_size_hw(const std::vector<torch::Tensor>& feats, int64_t stride) {
  TORCH_CHECK(!feats.empty() && feats[0].dim() == 4, "loss: feature maps [B, C, H, W] needed");
  return {feats[0].size(2) * stride, feats[0].size(3) * stride};
}

DetectionLoss::DetectionLoss(int64_t reg_max, AssignerOptions assigner, DetectionGains gains)
    : reg_max_(reg_max), assigner_(std::move(assigner)), gains_(gains) {
  TORCH_CHECK(reg_max_ >= 1, "reg_max must be >= 1");
}

torch::Tensor DetectionLoss::decode_distances(const torch::Tensor& pred_dist) const {
  if (reg_max_ == 1) return pred_dist;
  const auto b = pred_dist.size(0), a = pred_dist.size(1);
  const auto proj = torch::arange(reg_max_, pred_dist.options());  // [R] bin values
  return pred_dist.view({b, a, 4, reg_max_}).softmax(3).matmul(proj);
}

DetectionTerms DetectionLoss::operator()(const model::BranchOutput& branch,
                                         const std::vector<torch::Tensor>& feats,
                                         const PaddedTargets& gt, const Replicas& replicas,
                                         const AssignerKeypoints* keypoints) const {
  TORCH_CHECK(branch.boxes.defined() && branch.scores.defined(), "loss: branch has no outputs");
  TORCH_CHECK(branch.boxes.size(1) == 4 * reg_max_, "loss: box channels ", branch.boxes.size(1),
              " do not match reg_max ", reg_max_);
  const auto pred_dist = branch.boxes.permute({0, 2, 1}).contiguous();     // [B, A, 4R]
  const auto pred_scores = branch.scores.permute({0, 2, 1}).contiguous();  // [B, A, C]
  // Anchors in the scores' dtype (float32 in the criterion), not the features' (bf16 under
  // autocast cannot hold centres such as 255.5 exactly).
  std::vector<std::pair<int64_t, int64_t>> sizes;
  for (const auto& f : feats) sizes.emplace_back(f.size(2), f.size(3));
  const auto anchors = geometry::make_anchors(sizes, assigner_.strides, 0.5, pred_scores.options());
  const auto hw = input_size_hw(feats, assigner_.strides[0]);
  const auto dtype = pred_scores.scalar_type();

  DetectionTerms out;
  out.anchor_points = anchors.points;   // [A, 2]
  out.stride_tensor = anchors.strides;  // [A, 1]
  const auto pred_bboxes =
      geometry::dist2bbox(decode_distances(pred_dist), anchors.points, false);  // [B, A, 4]
  std::optional<KeypointOverlap> overlap;
  if (keypoints) {
    TORCH_CHECK(gt.keypoints_px.defined(), "pose assigner: the targets have no keypoints");
    overlap =
        KeypointOverlap{keypoints->predicted_px(anchors.points, anchors.strides), gt.keypoints_px,
                        keypoints->sigmas.to(pred_scores.device()), anchors.strides.view({-1})};
  }
  out.assignment =
      assign(assigner_, pred_scores.detach().sigmoid(),
             (pred_bboxes.detach() * anchors.strides).to(gt.boxes_xyxy_px.scalar_type()),
             anchors.points * anchors.strides, gt.labels, gt.boxes_xyxy_px, gt.mask,
             overlap ? &*overlap : nullptr);
  const auto& target_scores = out.assignment.target_scores;  // [B, A, C]
  const auto& fg = out.assignment.fg_mask;                   // [B, A]
  out.target_scores_sum = target_scores.sum();
  const auto normaliser =
      replicas.active()
          ? replicas.sum(out.target_scores_sum.detach().view({1})).squeeze(0).clamp_min(1) /
                static_cast<double>(replicas.world_size)
          : out.target_scores_sum.clamp_min(1);

  out.cls = F::binary_cross_entropy_with_logits(
                pred_scores, target_scores.to(dtype),
                F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kNone))
                .sum() /
            normaliser;
  out.box = torch::zeros({}, pred_scores.options());
  out.dfl = torch::zeros({}, pred_scores.options());
  if (fg.any().item<bool>()) {
    const auto target_grid = out.assignment.target_bboxes / anchors.strides;  // [B, A, 4]
    const auto weight = target_scores.sum(-1).index({fg}).unsqueeze(-1);      // [n, 1]
    const auto iou = geometry::bbox_iou(pred_bboxes.index({fg}), target_grid.index({fg}),
                                        geometry::IouKind::kCIoU);  // [n, 1]
    out.box = ((1.0 - iou) * weight).sum() / normaliser;
    if (reg_max_ > 1) {
      const auto target_ltrb = geometry::bbox2dist(anchors.points, target_grid, reg_max_);
      out.dfl =
          (dfl_loss(pred_dist.index({fg}).view({-1, reg_max_}), target_ltrb.index({fg}), reg_max_) *
           weight)
              .sum() /
          normaliser;
    } else {
      // ltrb in pixels / image size: l, r by width and t, b by height.
      const auto w = static_cast<double>(hw[1]), h = static_cast<double>(hw[0]);
      const auto size = torch::tensor({w, h, w, h}, pred_dist.options());  // [4]
      const auto target_ltrb =
          geometry::bbox2dist(anchors.points, target_grid, 1) * anchors.strides / size;
      const auto pred_ltrb = pred_dist * anchors.strides / size;  // [B, A, 4]
      out.dfl = (F::l1_loss(pred_ltrb.index({fg}), target_ltrb.index({fg}),
                            F::L1LossFuncOptions().reduction(torch::kNone))
                     .mean(-1, true) *
                 weight)
                    .sum() /
                normaliser;
    }
  }
  out.box = out.box * gains_.box;
  out.cls = out.cls * gains_.cls;
  out.dfl = out.dfl * gains_.dfl;
  return out;
}

}  // namespace detrain::loss
