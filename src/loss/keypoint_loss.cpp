// Keypoint losses; see keypoint_loss.h. Kept bit-compatible with the reference where its
// Python scalars and dtypes matter: K / count is computed as reciprocal * K (Python's
// __rtruediv__), and the float64 RLE weights multiply the float32 loss in place.
#include "loss/keypoint_loss.h"

#include "geometry/box_ops.h"

namespace detrain::loss {

namespace F = torch::nn::functional;
using torch::indexing::Slice;

torch::Tensor oks_location_loss(const torch::Tensor& pred, const torch::Tensor& gt,
                                const torch::Tensor& labelled, const torch::Tensor& area,
                                const torch::Tensor& sigmas) {
  const auto d = (pred.select(-1, 0) - gt.select(-1, 0)).pow(2) +
                 (pred.select(-1, 1) - gt.select(-1, 1)).pow(2);  // [n, K]
  const auto k = static_cast<double>(labelled.size(1));
  const auto factor = (labelled.ne(0).sum(1) + 1e-9).reciprocal() * k;  // [n]
  const auto e = d / ((2 * sigmas).pow(2) * (area + 1e-9) * 2);         // [n, K]
  return (factor.view({-1, 1}) * ((1 - torch::exp(-e)) * labelled)).mean();
}

torch::Tensor rle_joint_weights(int64_t num_keypoints) {
  if (num_keypoints != 17) return torch::ones({num_keypoints}, torch::kFloat64);
  return torch::tensor(
      {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.2, 1.2, 1.5, 1.5, 1.0, 1.0, 1.2, 1.2, 1.5, 1.5},
      torch::kFloat64);
}

torch::Tensor rle_loss(const torch::Tensor& pred, const torch::Tensor& gt,
                       const torch::Tensor& labelled, const torch::Tensor& joint_weights,
                       model::RealNVPImpl& flow) {
  const auto pred_visible = pred.index({labelled});  // [m, D + 2]
  const auto gt_visible = gt.index({labelled});      // [m, >= 2]
  auto weights = joint_weights.to(pred.device())
                     .unsqueeze(0)
                     .repeat({labelled.size(0), 1})
                     .index({labelled});                                       // [m] float64
  auto sigma = pred_visible.narrow(1, pred_visible.size(1) - 2, 2).sigmoid();  // [m, 2]
  auto error = (pred_visible.narrow(1, 0, 2) - gt_visible.narrow(1, 0, 2)) / (sigma + 1e-9);
  const auto valid = (torch::isnan(error) | torch::isinf(error)).any(-1).logical_not();  // [m]
  if (!valid.any().item<bool>()) return torch::zeros({}, pred.options());
  error = error.index({valid}).clamp(-100, 100);  // [m', 2]
  sigma = sigma.index({valid});
  weights = weights.index({valid});
  const auto log_phi = flow.log_prob(error);  // [m']
  auto loss = (torch::log(sigma) - log_phi.unsqueeze(1)) + (torch::log(sigma * 2) + error.abs());
  loss.mul_(weights.unsqueeze(1));  // float32 result of a float64 product, as the reference
  return (loss / loss.size(0)).sum();
}

KeypointLoss::KeypointLoss(std::array<int64_t, 2> kpt_shape, torch::Tensor sigmas, bool yolo26,
                           model::RealNVP flow, KeypointGains gains)
    : kpt_shape_(kpt_shape),
      sigmas_(std::move(sigmas)),
      joint_weights_(rle_joint_weights(kpt_shape[0])),
      yolo26_(yolo26),
      flow_(std::move(flow)),
      gains_(gains) {
  TORCH_CHECK(kpt_shape_[1] == 2 || kpt_shape_[1] == 3, "kpt_shape[1] must be 2 or 3");
  TORCH_CHECK(sigmas_.numel() == kpt_shape_[0], "keypoint loss: ", sigmas_.numel(),
              " OKS sigmas for ", kpt_shape_[0], " keypoints");
}

torch::Tensor KeypointLoss::decode(const torch::Tensor& raw, const torch::Tensor& anchors) const {
  const auto ax = anchors.select(1, 0).unsqueeze(1), ay = anchors.select(1, 1).unsqueeze(1);
  auto x = raw.select(-1, 0), y = raw.select(-1, 1);  // [B, A, K]
  if (yolo26_) {
    x = x + ax;
    y = y + ay;
  } else {
    x = x * 2.0 + (ax - 0.5);
    y = y * 2.0 + (ay - 0.5);
  }
  return torch::cat({x.unsqueeze(-1), y.unsqueeze(-1), raw.index({"...", Slice(2)})}, -1);
}

torch::Tensor KeypointLoss::per_anchor(const torch::Tensor& kpts) const {
  return kpts.permute({0, 2, 1}).contiguous().view(
      {kpts.size(0), -1, kpt_shape_[0], kpt_shape_[1]});
}

std::optional<AssignerKeypoints> KeypointLoss::assigner_keypoints(
    const model::BranchOutput& branch) const {
  if (!yolo26_) return std::nullopt;
  TORCH_CHECK(branch.kpts.defined(), "pose loss: the branch has no keypoint outputs");
  const auto raw = per_anchor(branch.kpts).detach();
  return AssignerKeypoints{[this, raw](const torch::Tensor& anchors, const torch::Tensor& strides) {
                             return decode(raw, anchors).narrow(-1, 0, 2) *
                                    strides.unsqueeze(-1);  // [B, A, K, 2]
                           },
                           sigmas_};
}

KeypointTerms KeypointLoss::operator()(const model::BranchOutput& branch,
                                       const DetectionTerms& detection,
                                       const PaddedTargets& gt) const {
  TORCH_CHECK(branch.kpts.defined(), "pose loss: the branch has no keypoint outputs");
  const auto bs = branch.kpts.size(0), k = kpt_shape_[0], dims = kpt_shape_[1];
  auto raw = per_anchor(branch.kpts);  // [B, A, K, D]
  const bool rle = has_rle() && branch.kpts_sigma.defined();
  if (rle) {
    const auto sigma = branch.kpts_sigma.permute({0, 2, 1}).contiguous().view({bs, -1, k, 2});
    raw = torch::cat({raw, sigma}, -1);  // [B, A, K, D + 2]
  }
  const auto pred = decode(raw, detection.anchor_points);

  KeypointTerms out;
  out.pose = torch::zeros({}, pred.options());
  out.kobj = torch::zeros({}, pred.options());
  if (has_rle()) out.rle = torch::zeros({}, pred.options());
  const auto& fg = detection.assignment.fg_mask;  // [B, A]
  if (fg.any().item<bool>()) {
    TORCH_CHECK(gt.keypoints_px.defined(), "pose loss: the targets have no keypoints");
    const auto& strides = detection.stride_tensor;  // [A, 1]
    const auto m = gt.keypoints_px.size(1), values = gt.keypoints_px.size(3);
    const auto index = detection.assignment.target_gt_idx.view({bs, -1, 1, 1})
                           .expand({-1, -1, k, values});                        // [B, A, K, V]
    auto selected = gt.keypoints_px.view({bs, m, k, values}).gather(1, index);  // [B, A, K, V]
    selected = torch::cat({selected.narrow(-1, 0, 2) / strides.view({1, -1, 1, 1}),
                           selected.narrow(-1, 2, values - 2)},
                          -1);
    const auto gt_kpt = selected.index({fg});  // [n, K, V]
    const auto boxes_grid = (detection.assignment.target_bboxes / strides).index({fg});  // [n, 4]
    const auto area = geometry::xyxy2xywh(boxes_grid).narrow(1, 2, 2).prod(1, true);     // [n, 1]
    const auto pred_kpt = pred.index({fg});  // [n, K, D (+2)]
    const auto labelled = values == 3 ? gt_kpt.select(-1, 2).ne(0)
                                      : torch::ones({gt_kpt.size(0), k}, fg.options());  // [n, K]
    out.pose = oks_location_loss(pred_kpt, gt_kpt, labelled, area, sigmas_.to(pred.device()));
    if (rle)
      out.rle = rle_loss(pred_kpt, gt_kpt, labelled, joint_weights_, *flow_.ptr()).clamp_min(0);
    if (dims == 3)
      out.kobj = F::binary_cross_entropy_with_logits(pred_kpt.select(-1, 2),
                                                     labelled.to(pred.scalar_type()));
  }
  out.pose = out.pose * gains_.pose;
  out.kobj = out.kobj * gains_.kobj;
  if (out.rle.defined()) out.rle = out.rle * gains_.rle;
  return out;
}

}  // namespace detrain::loss
