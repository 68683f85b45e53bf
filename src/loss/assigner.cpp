// Task-aligned assigner; see assigner.h. Every step is per (image, gt), so groups of images and
// chunks of gts give the reference's batched result; masks are bool where the reference
// multiplies by 0/1 floats, and after the top-k only the positive (image, gt, anchor) triples
// are handled, where the reference keeps [B, M, A] floats to the end.
#include "loss/assigner.h"

#include <torch/torch.h>

#include <algorithm>
#include <optional>

#include "geometry/box_iou.h"
#include "geometry/box_ops.h"

namespace detrain::loss {

namespace {

using torch::indexing::Slice;

// Candidate anchors of gts `boxes` [g, c, 4]: centres strictly inside, with sides under
// strides[1] (the reference's stride_val) enlarged to strides[1] around the same centre (only
// for this test; 8.4.41 enlarged only sides under strides[0]), real rows only -> [g, c, A] bool.
torch::Tensor candidates_in_gts(const AssignerOptions& o, const torch::Tensor& anchors,
                                const torch::Tensor& boxes, const torch::Tensor& real,
                                const KeypointOverlap* kp) {
  auto xywh = geometry::xyxy2xywh(boxes);  // [g, c, 4]
  const auto wh = xywh.narrow(-1, 2, 2);
  const double widened = static_cast<double>(o.strides.size() > 1 ? o.strides[1] : o.strides[0]);
  const auto small = wh.lt(widened).logical_and(real.unsqueeze(-1));
  xywh = torch::cat({xywh.narrow(-1, 0, 2), torch::where(small, torch::full_like(wh, widened), wh)},
                    -1);
  const auto grown = geometry::xywh2xyxy(xywh);                                    // [g, c, 4]
  const auto ax = anchors.select(1, 0), ay = anchors.select(1, 1);                 // [A]
  const auto side = [&](int64_t i) { return grown.select(-1, i).unsqueeze(-1); };  // [g, c, 1]
  const auto min_delta = torch::minimum(torch::minimum(ax - side(0), ay - side(1)),
                                        torch::minimum(side(2) - ax, side(3) - ay));  // [g, c, A]
  auto inside = min_delta.gt(o.eps).logical_and_(real.unsqueeze(-1));
  if (!kp) return inside;
  // The level gate on the real (not enlarged) box size, with the ungated fallback.
  const auto real_wh = boxes.narrow(-1, 2, 2) - boxes.narrow(-1, 0, 2);
  const auto size = real_wh.prod(-1, true).clamp_min(0).sqrt();  // [g, c, 1]
  const auto& s = kp->anchor_strides;                            // [A]
  const auto finest = s.eq(s.min()), coarsest = s.eq(s.max());
  const auto gated = inside.logical_and(size.ge(s * kp->level_lo).logical_or(finest))
                         .logical_and_(size.le(s * kp->level_hi).logical_or(coarsest));
  return torch::where(gated.any(-1, true), gated, inside);
}

// OKS of candidate pairs (image, gt, anchor) for gts with a labelled keypoint, `iou` for the
// others, in the reference's operation order (8 sigma^2 (area + eps) as ((2 sigma)^2 (area +
// eps)) * 2).
torch::Tensor keypoint_overlaps(const AssignerOptions& o, const KeypointOverlap& kp,
                                const torch::Tensor& boxes, const torch::Tensor& img,
                                const torch::Tensor& gt, const torch::Tensor& anchor,
                                const torch::Tensor& iou) {
  const auto gt_kpts = kp.gt_kpts_px.index({img, gt});                      // [P, K, 2 or 3]
  const auto labelled = gt_kpts.size(-1) > 2 ? gt_kpts.select(-1, 2).gt(0)  // [P, K]
                                             : torch::ones(gt_kpts.sizes().slice(0, 2),
                                                           gt_kpts.options().dtype(torch::kBool));
  const auto box = boxes.index({img, gt});  // [P, 4]
  const auto area = (box.narrow(-1, 2, 2) - box.narrow(-1, 0, 2)).prod(-1, true) * 0.53;
  const auto d = (kp.pred_kpts_px.index({img, anchor}).to(torch::kFloat) - gt_kpts.narrow(-1, 0, 2))
                     .pow(2)
                     .sum(-1);  // [P, K]
  const auto scale = (kp.sigmas * 2).pow(2) * (area + o.eps) * 2;
  const auto oks = ((-d / scale).exp() * labelled).sum(-1) / labelled.sum(-1).clamp_min(1);
  return torch::where(labelled.any(-1), oks.to(iou.scalar_type()), iou);
}

struct GroupMetrics {
  torch::Tensor in_gts;    // [g, M, A] bool: candidate of a real gt
  torch::Tensor overlaps;  // [g, M, A] CIoU clamped at 0 on candidates, else 0
  torch::Tensor align;     // [g, M, A] score^alpha * overlap^beta
};

// Candidates, overlaps and alignment metric of a group of images, a chunk of gts at a time
// so that the candidate pairs (and their [P, 4] box copies) stay within chunk_pairs.
GroupMetrics group_metrics(const AssignerOptions& o, const torch::Tensor& scores,
                           const torch::Tensor& pred_boxes, const torch::Tensor& anchors,
                           const torch::Tensor& labels, const torch::Tensor& boxes,
                           const torch::Tensor& real, const KeypointOverlap* kp) {
  const auto g = boxes.size(0), m = boxes.size(1), a = anchors.size(0);
  GroupMetrics out;
  out.in_gts = torch::zeros({g, m, a}, real.options());
  out.overlaps = torch::zeros({g, m, a}, pred_boxes.options());
  out.align = torch::zeros({g, m, a}, pred_boxes.options());
  const int64_t chunk = std::max<int64_t>(1, o.chunk_pairs / std::max<int64_t>(g * a, 1));
  for (int64_t start = 0; start < m; start += chunk) {
    const auto rows = Slice(start, std::min(m, start + chunk));
    const auto in_gts = candidates_in_gts(o, anchors, boxes.index({Slice(), rows}),
                                          real.index({Slice(), rows}), kp);  // [g, c, A]
    out.in_gts.index_put_({Slice(), rows}, in_gts);
    const auto pairs = in_gts.nonzero();  // [P, 3] (image, gt within chunk, anchor)
    if (pairs.size(0) == 0) continue;
    const auto img = pairs.select(1, 0), gt = pairs.select(1, 1) + start;
    const auto anchor = pairs.select(1, 2);
    const auto score = scores.index({img, anchor, labels.index({img, gt})});  // [P]
    auto iou = geometry::bbox_iou(boxes.index({img, gt}), pred_boxes.index({img, anchor}),
                                  geometry::IouKind::kCIoU)
                   .squeeze(-1)
                   .clamp_min(0);  // [P]
    if (kp) iou = keypoint_overlaps(o, *kp, boxes, img, gt, anchor, iou);
    out.overlaps.index_put_({img, gt, anchor}, iou);
    // Non-candidates have score and overlap 0, hence metric 0: computing it on pairs only
    // gives the reference's dense values.
    out.align.index_put_({img, gt, anchor}, score.pow(o.alpha) * iou.pow(o.beta));
  }
  return out;
}

// One-hot [g, M, A] of each gt's top k anchors by `metric`.
torch::Tensor topk_mask(const torch::Tensor& metric, int64_t k) {
  k = std::min<int64_t>(k, metric.size(-1));
  const auto index = std::get<1>(metric.topk(k, -1, /*largest=*/true));  // [g, M, k]
  return torch::zeros(metric.sizes(), metric.options().dtype(torch::kBool))
      .scatter_(-1, index, true);
}

// Positive (image, gt, anchor) triples [F, 3] after the conflict rule: an anchor claimed by
// several gts goes to the gt with the highest CIoU over all gts of the image (first on ties),
// even one that did not pick it, as in the reference.
torch::Tensor resolve_conflicts(const torch::Tensor& pos, const torch::Tensor& overlaps) {
  const auto g = pos.size(0), a = pos.size(2);
  auto pairs = pos.nonzero();  // [F, 3]
  const auto key = pairs.select(1, 0) * a + pairs.select(1, 2);
  const auto claims = torch::bincount(key, {}, g * a);  // [g * A]
  const auto shared = claims.gt(1);
  if (!shared.any().item<bool>()) return pairs;
  const auto shared_keys = shared.nonzero().view({-1});  // [S]
  const auto img = shared_keys.div(a, "floor"), anchor = shared_keys.remainder(a);
  const auto best = overlaps.permute({0, 2, 1}).index({img, anchor}).argmax(-1);  // [S]
  return torch::cat(
      {pairs.index({shared.index({key}).logical_not()}), torch::stack({img, best, anchor}, 1)});
}

// Permutation grouping triples by gt id, ordered by `value` inside a group (two stable sorts).
torch::Tensor order_by_gt(const torch::Tensor& gt_flat, const torch::Tensor& value,
                          bool descending) {
  const auto stable = c10::optional<bool>(true);
  const auto by_value = std::get<1>(torch::sort(value, stable, 0, descending));
  const auto by_gt = std::get<1>(torch::sort(gt_flat.index({by_value}), stable, 0, false));
  return by_value.index({by_gt});
}

// Keeps each gt's best `k` triples by metric (the one-to-one pass).
torch::Tensor keep_topk_per_gt(const torch::Tensor& pairs, const torch::Tensor& gt_flat,
                               const torch::Tensor& metric, int64_t k) {
  const auto order = order_by_gt(gt_flat, metric, /*descending=*/true);
  const auto sorted_gt = gt_flat.index({order});
  const auto counts = torch::bincount(sorted_gt);
  const auto first = counts.cumsum(0) - counts;  // first position of each gt
  const auto rank = torch::arange(order.size(0), order.options()) - first.index({sorted_gt});
  return pairs.index({order.index({rank.lt(k)})});
}

// Per triple, the largest `value` among the triples of its gt.
torch::Tensor max_per_gt(const torch::Tensor& gt_flat, const torch::Tensor& value) {
  const auto order = order_by_gt(gt_flat, value, /*descending=*/false);
  const auto last = torch::bincount(gt_flat).cumsum(0) - 1;  // last position of each gt
  return value.index({order}).index({last.index({gt_flat})});
}

// Assignment of images [first, first + g): scores [g, A, C], pred_boxes [g, A, 4],
// labels [g, M] int64, boxes [g, M, 4], real [g, M] bool. After the dense top-k, everything
// runs on the positive triples only (a few per gt) instead of [g, M, A] tensors.
void assign_group(const AssignerOptions& o, const torch::Tensor& scores,
                  const torch::Tensor& pred_boxes, const torch::Tensor& anchors,
                  const torch::Tensor& labels, const torch::Tensor& boxes,
                  const torch::Tensor& real, const KeypointOverlap* kp, Assignment& out,
                  int64_t first) {
  const auto g = boxes.size(0), m = boxes.size(1), a = anchors.size(0);
  const auto metrics = group_metrics(o, scores, pred_boxes, anchors, labels, boxes, real, kp);
  // Top-k by metric among all anchors, kept only where the anchor is a candidate.
  const auto pos = topk_mask(metrics.align, o.topk).logical_and_(metrics.in_gts);  // [g, M, A]
  auto pairs = resolve_conflicts(pos, metrics.overlaps);                           // [F, 3]
  auto img = pairs.select(1, 0), gt = pairs.select(1, 1), anchor = pairs.select(1, 2);
  auto align = metrics.align.index({img, gt, anchor});  // [F]
  if (o.topk2 > 0 && o.topk2 != o.topk) {
    pairs = keep_topk_per_gt(pairs, img * m + gt, align, o.topk2);
    img = pairs.select(1, 0), gt = pairs.select(1, 1), anchor = pairs.select(1, 2);
    align = metrics.align.index({img, gt, anchor});
  }

  // Each anchor now has at most one gt; background keeps gt row 0 (the reference's argmax).
  auto fg = torch::zeros({g, a}, real.options());
  auto gt_idx = torch::zeros({g, a}, labels.options());
  fg.index_put_({img, anchor}, true);
  gt_idx.index_put_({img, anchor}, gt);
  const auto target_labels = labels.gather(1, gt_idx).clamp_min(0);  // [g, A]
  const auto rows = Slice(first, first + g);
  out.target_labels.index_put_({rows}, target_labels);
  out.target_bboxes.index_put_({rows}, boxes.gather(1, gt_idx.unsqueeze(-1).expand({g, a, 4})));
  out.fg_mask.index_put_({rows}, fg);
  out.target_gt_idx.index_put_({rows}, gt_idx);

  // Soft targets: metric / best metric of the gt x best CIoU of the gt. Metrics are >= 0 and an
  // anchor has one positive gt, so the reference's max over gts is that gt's value.
  const auto gt_flat = img * m + gt;  // [F]
  const auto overlap = metrics.overlaps.index({img, gt, anchor});
  const auto best_align = max_per_gt(gt_flat, align);      // [F]
  const auto best_overlap = max_per_gt(gt_flat, overlap);  // [F]
  auto norm = torch::zeros({g, a}, align.options());       // [g, A]
  norm.index_put_({img, anchor}, align * best_overlap / (best_align + o.eps));
  const auto one_hot = torch::zeros({g, a, o.num_classes}, scores.options())
                           .scatter_(-1, target_labels.unsqueeze(-1), 1.0)
                           .mul_(fg.unsqueeze(-1));  // [g, A, C]
  out.target_scores.index_put_({rows}, one_hot * norm.unsqueeze(-1));
}

}  // namespace

Assignment assign(const AssignerOptions& o, const torch::Tensor& pd_scores,
                  const torch::Tensor& pd_bboxes, const torch::Tensor& anchor_points_px,
                  const torch::Tensor& gt_labels, const torch::Tensor& gt_bboxes,
                  const torch::Tensor& mask_gt, const KeypointOverlap* keypoints) {
  torch::NoGradGuard no_grad;
  TORCH_CHECK(pd_scores.dim() == 3 && pd_bboxes.dim() == 3 && pd_bboxes.size(-1) == 4,
              "assign: pd_scores [B, A, C] and pd_bboxes [B, A, 4] expected, got ",
              pd_scores.sizes(), " and ", pd_bboxes.sizes());
  TORCH_CHECK(pd_scores.size(-1) == o.num_classes, "assign: ", pd_scores.size(-1),
              " score columns for ", o.num_classes, " classes");
  const auto bs = pd_scores.size(0), a = pd_scores.size(1), m = gt_bboxes.size(1);
  const auto long_options = pd_scores.options().dtype(torch::kLong);
  Assignment out;
  out.fg_mask = torch::zeros({bs, a}, pd_scores.options().dtype(torch::kBool));
  out.target_gt_idx = torch::zeros({bs, a}, long_options);
  out.target_scores = torch::zeros({bs, a, o.num_classes}, pd_scores.options());
  if (m == 0) {  // no gt in the batch: background everywhere, label = num_classes
    out.target_labels = torch::full({bs, a}, o.num_classes, long_options);
    out.target_bboxes = torch::zeros_like(pd_bboxes);
    return out;
  }
  out.target_labels = torch::zeros({bs, a}, long_options);
  out.target_bboxes = torch::zeros({bs, a, 4}, gt_bboxes.options());
  const auto labels = gt_labels.view({bs, m}).to(torch::kLong);  // [B, M]
  const auto real = mask_gt.view({bs, m}).gt(0);                 // [B, M]
  // Images per group so that the dense [g, M, A] tensors stay within dense_elements.
  const int64_t group = std::max<int64_t>(1, o.dense_elements / std::max<int64_t>(m * a, 1));
  for (int64_t first = 0; first < bs; first += group) {
    const auto rows = Slice(first, std::min(bs, first + group));
    std::optional<KeypointOverlap> group_keypoints;
    if (keypoints) {
      group_keypoints = *keypoints;
      group_keypoints->pred_kpts_px = keypoints->pred_kpts_px.index({rows});
      group_keypoints->gt_kpts_px = keypoints->gt_kpts_px.index({rows});
    }
    assign_group(o, pd_scores.index({rows}), pd_bboxes.index({rows}), anchor_points_px,
                 labels.index({rows}), gt_bboxes.index({rows}), real.index({rows}),
                 group_keypoints ? &*group_keypoints : nullptr, out, first);
  }
  return out;
}

}  // namespace detrain::loss
