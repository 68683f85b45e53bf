// Task-aligned assigner; see assigner.h. Every step is per (image, gt), so running images one
// by one and gts in chunks gives the reference's batched result exactly; masks are bool where
// the reference multiplies by 0/1 floats (the same values, a quarter of the memory).
#include "loss/assigner.h"

#include <torch/torch.h>

#include <algorithm>

#include "geometry/box_iou.h"
#include "geometry/box_ops.h"

namespace detrain::loss {

namespace {

using torch::indexing::Slice;

// Candidate anchors of gts `boxes` [n, 4]: centres strictly inside, with sides under
// strides[0] replaced by strides[1] around the same centre (only for this test) -> [n, A].
torch::Tensor candidates_in_gts(const AssignerOptions& o, const torch::Tensor& anchors,
                                const torch::Tensor& boxes, const torch::Tensor& real) {
  auto xywh = geometry::xyxy2xywh(boxes);  // [n, 4]
  const auto wh = xywh.narrow(-1, 2, 2);
  const double widened = static_cast<double>(o.strides.size() > 1 ? o.strides[1] : o.strides[0]);
  const auto small = wh.lt(static_cast<double>(o.strides[0])).logical_and(real);  // [n, 2]
  xywh = torch::cat({xywh.narrow(-1, 0, 2), torch::where(small, torch::full_like(wh, widened), wh)},
                    -1);
  const auto grown = geometry::xywh2xyxy(xywh);  // [n, 4]
  const auto ax = anchors.select(1, 0).unsqueeze(0), ay = anchors.select(1, 1).unsqueeze(0);
  const auto col = [&](int64_t i) { return grown.select(1, i).unsqueeze(1); };  // [n, 1]
  const auto min_delta = torch::minimum(torch::minimum(ax - col(0), ay - col(1)),
                                        torch::minimum(col(2) - ax, col(3) - ay));  // [n, A]
  return min_delta.gt(o.eps);
}

struct ImageMetrics {
  torch::Tensor in_gts;    // [M, A] bool candidate and real gt
  torch::Tensor overlaps;  // [M, A] CIoU clamped at 0 on candidates, else 0
  torch::Tensor align;     // [M, A] score^alpha * overlap^beta
};

// Candidates, overlaps and alignment metric of one image, `chunk` gts at a time.
ImageMetrics image_metrics(const AssignerOptions& o, const torch::Tensor& scores,
                           const torch::Tensor& pred_boxes, const torch::Tensor& anchors,
                           const torch::Tensor& labels, const torch::Tensor& boxes,
                           const torch::Tensor& real) {
  const auto m = boxes.size(0), a = anchors.size(0);
  ImageMetrics out;
  out.in_gts = torch::zeros({m, a}, scores.options().dtype(torch::kBool));
  out.overlaps = torch::zeros({m, a}, pred_boxes.options());
  auto box_scores = torch::zeros({m, a}, scores.options());  // [M, A]
  const int64_t chunk = std::max<int64_t>(1, o.chunk_pairs / std::max<int64_t>(a, 1));
  for (int64_t start = 0; start < m; start += chunk) {
    const auto rows = Slice(start, std::min(m, start + chunk));
    const auto real_rows = real.index({rows});  // [c]
    const auto in_gts = candidates_in_gts(o, anchors, boxes.index({rows}), real_rows.unsqueeze(1))
                            .logical_and_(real_rows.unsqueeze(1));  // [c, A]
    out.in_gts.index_put_({rows}, in_gts);
    const auto pairs = in_gts.nonzero();  // [P, 2] (gt within chunk, anchor)
    if (pairs.size(0) == 0) continue;
    const auto gt = pairs.select(1, 0) + start, anchor = pairs.select(1, 1);
    const auto cls = labels.index_select(0, gt);
    box_scores.index_put_({gt, anchor}, scores.index({anchor, cls}));
    const auto iou =
        geometry::bbox_iou(boxes.index_select(0, gt), pred_boxes.index_select(0, anchor),
                           geometry::IouKind::kCIoU)
            .squeeze(-1)
            .clamp_min(0);  // [P]
    out.overlaps.index_put_({gt, anchor}, iou);
  }
  out.align = box_scores.pow(o.alpha) * out.overlaps.pow(o.beta);
  return out;
}

// One-hot [M, A] of each row's top k anchors by `metric`.
torch::Tensor topk_mask(const torch::Tensor& metric, int64_t k) {
  k = std::min<int64_t>(k, metric.size(1));
  const auto index = std::get<1>(metric.topk(k, -1, /*largest=*/true));  // [M, k]
  return torch::zeros(metric.sizes(), metric.options().dtype(torch::kBool))
      .scatter_(1, index, true);
}

// Assignment of one image: labels [M], boxes [M, 4], real [M] bool.
void assign_image(const AssignerOptions& o, const torch::Tensor& scores,
                  const torch::Tensor& pred_boxes, const torch::Tensor& anchors,
                  const torch::Tensor& labels, const torch::Tensor& boxes,
                  const torch::Tensor& real, Assignment& out, int64_t b) {
  auto metrics = image_metrics(o, scores, pred_boxes, anchors, labels, boxes, real);
  // Top-k by metric among all anchors, kept only where the anchor is a candidate.
  auto pos = topk_mask(metrics.align, o.topk).logical_and_(metrics.in_gts);  // [M, A]
  // An anchor claimed by several gts goes to the one with the highest CIoU (first on ties).
  auto claims = pos.sum(0);  // [A]
  if (claims.max().item<int64_t>() > 1) {
    const auto best = metrics.overlaps.argmax(0, true);  // [1, A]
    const auto is_best = torch::zeros_like(pos).scatter_(0, best, true);
    pos = torch::where(claims.gt(1).unsqueeze(0), is_best, pos);
  }
  if (o.topk2 > 0 && o.topk2 != o.topk) pos.logical_and_(topk_mask(metrics.align * pos, o.topk2));
  const auto pos_f = pos.to(metrics.align.scalar_type());  // [M, A]
  const auto fg = pos.any(0);                              // [A]
  const auto gt_idx = pos_f.argmax(0);                     // [A], 0 for background

  const auto target_labels = labels.index_select(0, gt_idx).clamp_min(0);  // [A]
  out.target_labels[b] = target_labels;
  out.target_bboxes[b] = boxes.index_select(0, gt_idx);
  out.fg_mask[b] = fg;
  out.target_gt_idx[b] = gt_idx;

  // Soft targets: metric / best metric of the gt x best CIoU of the gt, max over gts.
  const auto align = metrics.align * pos_f;
  const auto best_align = align.amax(-1, true);                             // [M, 1]
  const auto best_overlap = (metrics.overlaps * pos_f).amax(-1, true);      // [M, 1]
  const auto norm = (align * best_overlap / (best_align + o.eps)).amax(0);  // [A]
  const auto one_hot = torch::zeros({gt_idx.size(0), o.num_classes}, scores.options())
                           .scatter_(1, target_labels.unsqueeze(1), 1.0)
                           .mul_(fg.unsqueeze(1));  // [A, C]
  out.target_scores[b] = one_hot * norm.unsqueeze(1);
}

}  // namespace

Assignment assign(const AssignerOptions& o, const torch::Tensor& pd_scores,
                  const torch::Tensor& pd_bboxes, const torch::Tensor& anchor_points_px,
                  const torch::Tensor& gt_labels, const torch::Tensor& gt_bboxes,
                  const torch::Tensor& mask_gt) {
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
  for (int64_t b = 0; b < bs; ++b)
    assign_image(o, pd_scores[b], pd_bboxes[b], anchor_points_px, labels[b], gt_bboxes[b], real[b],
                 out, b);
  return out;
}

}  // namespace detrain::loss
