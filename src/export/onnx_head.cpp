// See onnx_head.h. Mirrors HeadImpl::forward_branch, decode and topk in heads.cpp op by op, so
// that onnxruntime rounds like LibTorch.
#include "export/onnx_head.h"

#include "common/errors.h"
#include "geometry/anchors.h"

namespace detrain::exporter {

namespace {

using A = OnnxAttribute;

Value op1(EmitContext& ctx, const std::string& type, const std::vector<std::string>& inputs,
          torch::Tensor sample, std::vector<OnnxAttribute> attributes, const std::string& hint) {
  return {ctx.graph.op(type, inputs, std::move(attributes), hint), std::move(sample)};
}

// Casts a tower output to float32 for decoding (half exports).
Value widen(EmitContext& ctx, const Value& x, const std::string& hint) {
  if (ctx.dtype == torch::kFloat) return x;
  return op1(ctx, "Cast", {x.name}, x.sample, {A::of_int("to", 1)}, hint);
}

// Runs each level's tower on its input, flattens to [B, channels, H*W] and concatenates.
Value per_level(EmitContext& ctx, torch::nn::Module& towers, const std::vector<Value>& inputs,
                const std::string& path) {
  std::vector<Value> flat;
  size_t level = 0;
  for (const auto& item : towers.named_children()) {
    const Value y = emit_module(ctx, *item.value(), inputs.at(level++), path + "." + item.key());
    const int64_t channels = y.sample.size(1);
    flat.push_back(op1(ctx, "Reshape", {y.name, ctx.graph.ints({0, channels, -1}, path)},
                       y.sample.flatten(2), {}, path));
  }
  return widen(ctx, emit_concat(ctx, flat, 2, path), path);
}

std::vector<Value> split(EmitContext& ctx, const Value& x, const std::vector<int64_t>& sizes,
                         int64_t axis, const std::string& hint) {
  auto names = ctx.graph.op_n("Split", {x.name, ctx.graph.ints(sizes, hint)}, sizes.size(),
                              {A::of_int("axis", axis)}, hint);
  auto samples = x.sample.split_with_sizes(sizes, axis);
  std::vector<Value> parts;
  for (size_t i = 0; i < sizes.size(); ++i) parts.push_back({names[i], samples[i]});
  return parts;
}

Value constant(EmitContext& ctx, const torch::Tensor& t, const std::string& hint) {
  return {ctx.graph.initializer(t, hint), t};
}

Value binary(EmitContext& ctx, const std::string& type, const Value& a, const Value& b,
             torch::Tensor sample, const std::string& hint) {
  return op1(ctx, type, {a.name, b.name}, std::move(sample), {}, hint);
}

// model::sum_in_order over axis 1: Split into slices, then one Add per slice in index order.
Value sum_in_order(EmitContext& ctx, const Value& x, const std::string& hint) {
  const int64_t n = x.sample.size(1);
  const std::vector<Value> slices = split(ctx, x, std::vector<int64_t>(n, 1), 1, hint);
  Value total = slices[0];
  for (int64_t i = 1; i < n; ++i)
    total = binary(ctx, "Add", total, slices[i], total.sample + slices[i].sample, hint);
  return total;
}

// DFLImpl::forward op for op: max-shifted exp over its in-order sum, times the frozen weights
// 0..R-1, summed in order. (ONNX Softmax and a 1x1 Conv would normalise and accumulate in
// onnxruntime's own order: up to 4 float steps of a pixel coordinate once times the stride.)
Value dfl(EmitContext& ctx, torch::nn::Module& dfl_module, const Value& x,
          const std::string& path) {
  auto* conv = child(dfl_module, "conv", path).as<model::PlainConvImpl>();
  if (!conv) throw ModelError("ONNX export: " + path + ".conv is not a plain conv");
  const int64_t bins = conv->weight.size(1), anchors = x.sample.size(2);
  Value v = op1(ctx, "Reshape", {x.name, ctx.graph.ints({0, 4, bins, anchors}, path)},
                x.sample.view({-1, 4, bins, anchors}), {}, path);
  v = op1(ctx, "Transpose", {v.name}, v.sample.transpose(2, 1), {A::of_ints("perm", {0, 2, 1, 3})},
          path);  // [B, R, 4, A]
  std::vector<OnnxAttribute> reduce_attrs{A::of_int("keepdims", 1)};
  std::vector<std::string> reduce_inputs{v.name};
  // ReduceMax takes its axes as an input from opset 18 on.
  if (ctx.graph.opset() >= 18)
    reduce_inputs.push_back(ctx.graph.ints({1}, path));
  else
    reduce_attrs.push_back(A::of_ints("axes", {1}));
  const Value max =
      op1(ctx, "ReduceMax", reduce_inputs, v.sample.amax(1, true), reduce_attrs, path);
  const Value shifted = binary(ctx, "Sub", v, max, v.sample - max.sample, path);
  const Value e = op1(ctx, "Exp", {shifted.name}, shifted.sample.exp(), {}, path);
  const Value total = sum_in_order(ctx, e, path);
  const Value probs = binary(ctx, "Div", e, total, e.sample / total.sample, path);
  const Value weights = constant(ctx, conv->weight.to(torch::kFloat), path + ".w");  // [1,R,1,1]
  const Value weighted = binary(ctx, "Mul", probs, weights, probs.sample * weights.sample, path);
  const Value expectation = sum_in_order(ctx, weighted, path);  // [B, 1, 4, A]
  return op1(ctx, "Reshape", {expectation.name, ctx.graph.ints({0, 4, anchors}, path)},
             expectation.sample.view({-1, 4, anchors}), {}, path);
}

Value sigmoid(EmitContext& ctx, const Value& x, const std::string& hint) {
  return op1(ctx, "Sigmoid", {x.name}, x.sample.sigmoid(), {}, hint);
}

// Keypoints [B, K*ndim, A] -> pixels, as HeadImpl::decode.
Value decode_keypoints(EmitContext& ctx, const model::HeadOptions& o, const Value& kpts,
                       const torch::Tensor& points, const torch::Tensor& strides,
                       const std::string& path) {
  const int64_t k = o.kpt_shape[0], ndim = o.kpt_shape[1], anchors = kpts.sample.size(2);
  const Value grouped =
      op1(ctx, "Reshape", {kpts.name, ctx.graph.ints({0, k, ndim, anchors}, path)},
          kpts.sample.view({-1, k, ndim, anchors}), {}, path);
  std::vector<Value> parts = split(ctx, grouped, std::vector<int64_t>(ndim, 1), 2, path);
  const Value stride_c = constant(ctx, strides, path + ".strides");
  for (int axis = 0; axis < 2; ++axis) {
    Value& c = parts[axis];
    if (o.kind == model::HeadKind::kPose) {
      const Value two = constant(ctx, torch::scalar_tensor(2.0), path + ".two");
      const Value offset = constant(ctx, points[axis] - 0.5, path + ".offset");
      c = binary(ctx, "Mul", c, two, c.sample * 2.0, path);
      c = binary(ctx, "Add", c, offset, c.sample + offset.sample, path);
    } else {
      const Value grid = constant(ctx, points[axis], path + ".grid");
      c = binary(ctx, "Add", c, grid, c.sample + grid.sample, path);
    }
    c = binary(ctx, "Mul", c, stride_c, c.sample * strides, path);
  }
  if (ndim == 3) parts[2] = sigmoid(ctx, parts[2], path);
  const Value joined = emit_concat(ctx, parts, 2, path);
  return op1(ctx, "Reshape", {joined.name, ctx.graph.ints({0, k * ndim, anchors}, path)},
             joined.sample.view({-1, k * ndim, anchors}), {}, path);
}

Value unsqueeze_last(EmitContext& ctx, const Value& x, const std::string& hint) {
  return op1(ctx, "Unsqueeze", {x.name, ctx.graph.ints({-1}, hint)}, x.sample.unsqueeze(-1), {},
             hint);
}

// Gathers rows of `source` [B, A, C] at `index` [B, k] (int64) -> [B, k, C].
Value gather_rows(EmitContext& ctx, const Value& source, const Value& index,
                  const std::string& hint) {
  const int64_t columns = source.sample.size(2);
  const Value idx = unsqueeze_last(ctx, index, hint);
  const Value tiled = op1(ctx, "Tile", {idx.name, ctx.graph.ints({1, 1, columns}, hint)},
                          idx.sample.repeat({1, 1, columns}), {}, hint);
  return op1(ctx, "GatherElements", {source.name, tiled.name},
             source.sample.gather(1, tiled.sample), {A::of_int("axis", 1)}, hint);
}

// TopK along the last axis -> (values, indices).
std::pair<Value, Value> topk(EmitContext& ctx, const Value& x, int64_t k, const std::string& hint) {
  auto names = ctx.graph.op_n(
      "TopK", {x.name, ctx.graph.ints({k}, hint)}, 2,
      {A::of_int("axis", -1), A::of_int("largest", 1), A::of_int("sorted", 1)}, hint);
  auto [values, indices] = x.sample.topk(k);
  return {{names[0], values}, {names[1], indices}};
}

// HeadImpl::topk: best k anchors by their best class, then the best k (anchor, class) pairs.
Value end2end_topk(EmitContext& ctx, const model::HeadOptions& o, const Value& decoded,
                   int64_t max_det, const std::string& path) {
  const int64_t nc = o.nc, nk = o.pose() ? o.num_keypoint_values() : 0;
  const Value preds = op1(ctx, "Transpose", {decoded.name}, decoded.sample.permute({0, 2, 1}),
                          {A::of_ints("perm", {0, 2, 1})}, path);
  const int64_t k = std::min(max_det, preds.sample.size(1));
  std::vector<int64_t> sizes{4, nc};
  if (nk) sizes.push_back(nk);
  const std::vector<Value> cols = split(ctx, preds, sizes, 2, path);
  const Value& boxes = cols[0];
  const Value& scores = cols[1];
  std::vector<OnnxAttribute> reduce_attrs{A::of_int("keepdims", 0)};
  std::vector<std::string> reduce_inputs{scores.name};
  // ReduceMax takes its axes as an input from opset 18 on.
  if (ctx.graph.opset() >= 18)
    reduce_inputs.push_back(ctx.graph.ints({-1}, path));
  else
    reduce_attrs.push_back(A::of_ints("axes", {-1}));
  const Value best =
      op1(ctx, "ReduceMax", reduce_inputs, std::get<0>(scores.sample.max(-1)), reduce_attrs, path);
  const Value candidate = topk(ctx, best, k, path).second;                   // [B, k]
  const Value candidate_scores = gather_rows(ctx, scores, candidate, path);  // [B, k, nc]
  const Value flat = op1(ctx, "Reshape", {candidate_scores.name, ctx.graph.ints({0, -1}, path)},
                         candidate_scores.sample.flatten(1), {}, path);
  const auto [top_scores, flat_index] = topk(ctx, flat, k, path);  // [B, k]
  const Value nc_const = constant(ctx, torch::scalar_tensor(nc, torch::kLong), path + ".nc");
  const Value row =
      binary(ctx, "Div", flat_index, nc_const, flat_index.sample.div(nc, "floor"), path);
  const Value anchor = op1(ctx, "GatherElements", {candidate.name, row.name},
                           candidate.sample.gather(1, row.sample), {A::of_int("axis", 1)}, path);
  const Value cls_index =
      binary(ctx, "Mod", flat_index, nc_const, flat_index.sample.remainder(nc), path);
  const Value cls = op1(ctx, "Cast", {cls_index.name}, cls_index.sample.to(torch::kFloat),
                        {A::of_int("to", 1)}, path);
  std::vector<Value> columns{gather_rows(ctx, boxes, anchor, path),
                             unsqueeze_last(ctx, top_scores, path), unsqueeze_last(ctx, cls, path)};
  if (nk) columns.push_back(gather_rows(ctx, cols[2], anchor, path));
  return emit_concat(ctx, columns, -1, path);
}

}  // namespace

HeadGraph emit_head(EmitContext& ctx, model::HeadImpl& head, const std::vector<Value>& feats,
                    int64_t max_det, const std::string& path) {
  const auto& o = head.options();
  const std::string prefix = o.end2end ? "one2one_" : "";
  auto towers = [&](const std::string& name) -> torch::nn::Module& {
    return child(head, prefix + name, path);
  };
  auto tower_path = [&](const std::string& name) { return path + "." + prefix + name; };
  Value boxes = per_level(ctx, towers("cv2"), feats, tower_path("cv2"));
  const Value scores = per_level(ctx, towers("cv3"), feats, tower_path("cv3"));

  std::vector<std::pair<int64_t, int64_t>> sizes;
  for (const auto& f : feats) sizes.emplace_back(f.sample.size(2), f.sample.size(3));
  const auto anchors = geometry::make_anchors(sizes, o.strides, 0.5, torch::kFloat);
  const auto points = anchors.points.transpose(0, 1).contiguous();    // [2, A]
  const auto strides = anchors.strides.transpose(0, 1).contiguous();  // [1, A]

  if (o.reg_max > 1) boxes = dfl(ctx, child(head, "dfl", path), boxes, path + ".dfl");
  // geometry::dist2bbox: xy1 = p - lt, xy2 = p + rb; xywh for NMS heads, xyxy for end2end.
  const std::string bp = path + ".boxes";
  const std::vector<Value> lt_rb = split(ctx, boxes, {2, 2}, 1, bp);
  const Value grid = constant(ctx, points.unsqueeze(0), bp + ".grid");
  const Value xy1 = binary(ctx, "Sub", grid, lt_rb[0], grid.sample - lt_rb[0].sample, bp);
  const Value xy2 = binary(ctx, "Add", grid, lt_rb[1], grid.sample + lt_rb[1].sample, bp);
  Value box_px;
  if (o.end2end) {
    box_px = emit_concat(ctx, {xy1, xy2}, 1, bp);
  } else {
    const Value two = constant(ctx, torch::scalar_tensor(2.0), bp + ".two");
    const Value sum = binary(ctx, "Add", xy1, xy2, xy1.sample + xy2.sample, bp);
    const Value center = binary(ctx, "Div", sum, two, sum.sample / 2, bp);
    const Value size = binary(ctx, "Sub", xy2, xy1, xy2.sample - xy1.sample, bp);
    box_px = emit_concat(ctx, {center, size}, 1, bp);
  }
  const Value stride_c = constant(ctx, strides, bp + ".strides");
  box_px = binary(ctx, "Mul", box_px, stride_c, box_px.sample * strides, bp);

  std::vector<Value> columns{box_px, sigmoid(ctx, scores, path + ".scores")};
  if (o.pose()) {
    Value kpts;
    if (o.kind == model::HeadKind::kPose) {
      kpts = per_level(ctx, towers("cv4"), feats, tower_path("cv4"));
    } else {
      // Pose26: a shared hidden tower per level, then the keypoint convs on it.
      std::vector<Value> hidden;
      size_t level = 0;
      for (const auto& item : towers("cv4").named_children())
        hidden.push_back(emit_module(ctx, *item.value(), feats.at(level++),
                                     tower_path("cv4") + "." + item.key()));
      kpts = per_level(ctx, towers("cv4_kpts"), hidden, tower_path("cv4_kpts"));
    }
    columns.push_back(decode_keypoints(ctx, o, kpts, points, strides, path + ".kpts"));
  }
  HeadGraph out;
  out.decoded = emit_concat(ctx, columns, 1, path + ".decoded");
  if (o.end2end) out.detections = end2end_topk(ctx, o, out.decoded, max_det, path + ".topk");
  return out;
}

}  // namespace detrain::exporter
