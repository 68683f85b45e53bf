// Padding of collated targets; see targets.h. Scaling happens before the xywh -> xyxy
// conversion, in that order, as the reference's preprocess does, so pixel boxes round alike.
#include "loss/targets.h"

#include <torch/torch.h>

#include "geometry/box_ops.h"

namespace detrain::loss {

namespace {

// Row of each object inside its image: position minus the image's first position.
torch::Tensor rows_within_image(const torch::Tensor& batch_idx, int64_t batch_size) {
  const auto counts = torch::bincount(batch_idx, {}, batch_size);  // [B]
  const auto first = counts.cumsum(0) - counts;                    // [B]
  return torch::arange(batch_idx.size(0), batch_idx.options()) - first.index_select(0, batch_idx);
}

}  // namespace

PaddedTargets pad_targets(const Targets& targets, int64_t batch_size,
                          std::array<int64_t, 2> imgsz_hw, const torch::Tensor& like) {
  const auto options = like.options();
  const auto device = like.device();
  const auto n = targets.batch_idx.defined() ? targets.batch_idx.size(0) : 0;
  const bool pose = targets.keypoints.defined() && targets.keypoints.dim() == 3;
  PaddedTargets out;
  if (n == 0) {
    out.labels = torch::zeros({batch_size, 0, 1}, options);
    out.boxes_xyxy_px = torch::zeros({batch_size, 0, 4}, options);
    out.mask = torch::zeros({batch_size, 0, 1}, options);
    if (pose)
      out.keypoints_px = torch::zeros(
          {batch_size, 0, targets.keypoints.size(1), targets.keypoints.size(2)}, options);
    return out;
  }
  const auto batch_idx = targets.batch_idx.to(device, torch::kLong).view({-1});  // [N]
  TORCH_CHECK(batch_idx.min().item<int64_t>() >= 0 && batch_idx.max().item<int64_t>() < batch_size,
              "targets: batch_idx outside [0, ", batch_size, ")");
  TORCH_CHECK(n < 2 || (batch_idx.slice(0, 1) >= batch_idx.slice(0, 0, -1)).all().item<bool>(),
              "targets: rows must be sorted by batch_idx (the collate order)");
  const auto rows = rows_within_image(batch_idx, batch_size);  // [N]
  const auto max_rows = rows.max().item<int64_t>() + 1;

  const auto height = static_cast<double>(imgsz_hw[0]), width = static_cast<double>(imgsz_hw[1]);
  const auto scale = torch::tensor({width, height, width, height}, options);           // [4]
  const auto boxes_px = geometry::xywh2xyxy(targets.boxes_xywhn.to(options) * scale);  // [N, 4]

  out.labels = torch::zeros({batch_size, max_rows, 1}, options);
  out.boxes_xyxy_px = torch::zeros({batch_size, max_rows, 4}, options);
  out.labels.index_put_({batch_idx, rows}, targets.cls.to(options).view({-1, 1}));
  out.boxes_xyxy_px.index_put_({batch_idx, rows}, boxes_px);
  out.mask = out.boxes_xyxy_px.sum(2, true).gt(0).to(options.dtype());
  if (pose) {
    auto keypoints = targets.keypoints.to(options).clone();  // [N, K, 3]
    keypoints.select(-1, 0).mul_(width);
    keypoints.select(-1, 1).mul_(height);
    out.keypoints_px = torch::zeros({batch_size, max_rows, keypoints.size(1), keypoints.size(2)},
                                    options);  // [B, M, K, 3]
    out.keypoints_px.index_put_({batch_idx, rows}, keypoints);
  }
  return out;
}

}  // namespace detrain::loss
