// See onnx_modules.h. Every emitter mirrors the forward() of its module in layers.cpp.
#include "export/onnx_modules.h"

#include "common/errors.h"
#include "model/layers.h"

namespace detrain::exporter {

namespace {

using model::AttentionImpl;
using model::BottleneckImpl;
using model::C2fImpl;
using model::C2PSAImpl;
using model::C3Impl;
using model::ChainImpl;
using model::ConvImpl;
using model::PlainConvImpl;
using model::PSABlockImpl;
using model::SPPFImpl;
using model::UpsampleImpl;
using A = OnnxAttribute;

std::string join(const std::string& path, const std::string& name) {
  return path.empty() ? name : path + "." + name;
}

Value sub(EmitContext& ctx, torch::nn::Module& parent, const std::string& name, const Value& x,
          const std::string& path) {
  return emit_module(ctx, child(parent, name, path), x, join(path, name));
}

Value binary(EmitContext& ctx, const std::string& op, const Value& a, const Value& b,
             torch::Tensor sample, const std::string& hint) {
  return {ctx.graph.op(op, {a.name, b.name}, {}, hint), std::move(sample)};
}

// Splits along axis 1 into pieces of `sizes` channels.
std::vector<Value> split_channels(EmitContext& ctx, const Value& x, std::vector<int64_t> sizes,
                                  const std::string& hint) {
  auto names = ctx.graph.op_n("Split", {x.name, ctx.graph.ints(sizes, hint + ".split")},
                              sizes.size(), {A::of_int("axis", 1)}, hint);
  auto samples = x.sample.split_with_sizes(sizes, 1);
  std::vector<Value> parts;
  for (size_t i = 0; i < sizes.size(); ++i) parts.push_back({names[i], samples[i]});
  return parts;
}

// Conv node from a weight [Co, Ci/g, kh, kw] and an optional bias.
std::string conv_node(EmitContext& ctx, const std::string& x, const torch::Tensor& weight,
                      const torch::Tensor& bias, std::vector<int64_t> stride,
                      std::vector<int64_t> padding, std::vector<int64_t> dilation, int64_t groups,
                      const std::string& path) {
  std::vector<std::string> inputs{x, ctx.graph.initializer(weight.to(ctx.dtype), path + ".weight")};
  if (bias.defined()) inputs.push_back(ctx.graph.initializer(bias.to(ctx.dtype), path + ".bias"));
  return ctx.graph.op(
      "Conv", inputs,
      {A::of_ints("kernel_shape", {weight.size(2), weight.size(3)}), A::of_ints("strides", stride),
       A::of_ints("pads", {padding[0], padding[1], padding[0], padding[1]}),
       A::of_ints("dilations", dilation), A::of_int("group", groups)},
      path);
}

Value conv(EmitContext& ctx, ConvImpl& m, const Value& x, const std::string& path) {
  if (!m.fused())
    throw ModelError("ONNX export: " + path + " still has its BatchNorm; fuse the model first");
  const auto& conv2d = *m.conv;
  const auto& o = conv2d.options;
  const auto* padding = std::get_if<torch::ExpandingArray<2>>(&o.padding());
  if (!padding) throw ModelError("ONNX export: " + path + " uses string padding, not supported");
  auto vec = [](const torch::ExpandingArray<2>& a) {
    return std::vector<int64_t>{a->at(0), a->at(1)};
  };
  std::string y = conv_node(ctx, x.name, conv2d.weight, conv2d.bias, vec(o.stride()), vec(*padding),
                            vec(o.dilation()), o.groups(), path + ".conv");
  // SiLU is not an ONNX operator: x * sigmoid(x).
  if (m.activated()) y = ctx.graph.op("Mul", {y, ctx.graph.op("Sigmoid", {y}, {}, path)}, {}, path);
  return {y, m.forward(x.sample)};
}

Value plain_conv(EmitContext& ctx, PlainConvImpl& m, const Value& x, const std::string& path) {
  return {conv_node(ctx, x.name, m.weight, m.bias, {1, 1}, {0, 0}, {1, 1}, 1, path),
          m.forward(x.sample)};
}

Value chain(EmitContext& ctx, ChainImpl& m, const Value& x, const std::string& path) {
  Value y = x;
  for (const auto& item : m.named_children())
    y = emit_module(ctx, *item.value(), y, join(path, item.key()));
  return y;
}

Value bottleneck(EmitContext& ctx, BottleneckImpl& m, const Value& x, const std::string& path) {
  const Value y = sub(ctx, m, "cv2", sub(ctx, m, "cv1", x, path), path);
  return m.residual() ? binary(ctx, "Add", x, y, x.sample + y.sample, path) : y;
}

// cv1's output split in two halves; `tail` runs on the second one.
std::vector<Value> halves(EmitContext& ctx, torch::nn::Module& m, const Value& x,
                          const std::string& path) {
  const Value a = sub(ctx, m, "cv1", x, path);
  const int64_t c = a.sample.size(1) / 2;
  return split_channels(ctx, a, {c, c}, path);
}

Value c2f(EmitContext& ctx, C2fImpl& m, const Value& x, const std::string& path) {
  std::vector<Value> outputs = halves(ctx, m, x, path);
  auto& blocks = child(m, "m", path);
  for (const auto& item : blocks.named_children())
    outputs.push_back(
        emit_module(ctx, *item.value(), outputs.back(), join(path, "m." + item.key())));
  return sub(ctx, m, "cv2", emit_concat(ctx, outputs, 1, path), path);
}

Value c2psa(EmitContext& ctx, C2PSAImpl& m, const Value& x, const std::string& path) {
  const std::vector<Value> parts = halves(ctx, m, x, path);
  const Value tail = sub(ctx, m, "m", parts[1], path);
  return sub(ctx, m, "cv2", emit_concat(ctx, {parts[0], tail}, 1, path), path);
}

Value c3(EmitContext& ctx, C3Impl& m, const Value& x, const std::string& path) {
  const Value a = sub(ctx, m, "m", sub(ctx, m, "cv1", x, path), path);
  const Value b = sub(ctx, m, "cv2", x, path);
  return sub(ctx, m, "cv3", emit_concat(ctx, {a, b}, 1, path), path);
}

Value sppf(EmitContext& ctx, SPPFImpl& m, const Value& x, const std::string& path) {
  auto* pool = child(m, "m", path).as<torch::nn::MaxPool2d>();
  if (!pool) throw ModelError("ONNX export: " + path + ".m is not a MaxPool2d");
  const auto& o = pool->options;
  const int64_t k = o.kernel_size()->at(0), pad = o.padding()->at(0), stride = o.stride()->at(0);
  std::vector<Value> pooled{sub(ctx, m, "cv1", x, path)};
  for (int64_t i = 0; i < m.pools(); ++i) {
    const std::string y =
        ctx.graph.op("MaxPool", {pooled.back().name},
                     {A::of_ints("kernel_shape", {k, k}), A::of_ints("strides", {stride, stride}),
                      A::of_ints("pads", {pad, pad, pad, pad})},
                     path + ".m");
    pooled.push_back({y, pool->forward(pooled.back().sample)});
  }
  const Value y = sub(ctx, m, "cv2", emit_concat(ctx, pooled, 1, path), path);
  return m.residual() ? binary(ctx, "Add", y, x, y.sample + x.sample, path) : y;
}

Value reshape(EmitContext& ctx, const Value& x, const std::vector<int64_t>& shape,
              torch::Tensor sample, const std::string& hint) {
  // A 0 in the target copies the input's batch size, which keeps the batch dynamic.
  return {ctx.graph.op("Reshape", {x.name, ctx.graph.ints(shape, hint + ".shape")}, {}, hint),
          std::move(sample)};
}

Value transpose_last(EmitContext& ctx, const Value& x, const std::string& hint) {
  return {ctx.graph.op("Transpose", {x.name}, {A::of_ints("perm", {0, 1, 3, 2})}, hint),
          x.sample.transpose(-2, -1)};
}

Value attention(EmitContext& ctx, AttentionImpl& m, const Value& x, const std::string& path) {
  const auto& s = x.sample;
  const int64_t c = s.size(1), h = s.size(2), w = s.size(3), n = h * w;
  const int64_t heads = m.num_heads(), kd = m.key_dim(), hd = m.head_dim();
  const Value qkv = sub(ctx, m, "qkv", x, path);
  const Value grouped = reshape(ctx, qkv, {0, heads, 2 * kd + hd, n},
                                qkv.sample.view({s.size(0), heads, 2 * kd + hd, n}), path);
  auto names = ctx.graph.op_n("Split", {grouped.name, ctx.graph.ints({kd, kd, hd}, path)}, 3,
                              {A::of_int("axis", 2)}, path);
  auto samples = grouped.sample.split_with_sizes({kd, kd, hd}, 2);
  const Value q{names[0], samples[0]}, k{names[1], samples[1]}, v{names[2], samples[2]};
  const Value qt = transpose_last(ctx, q, path);
  Value attn = binary(ctx, "MatMul", qt, k, qt.sample.matmul(k.sample), path);
  const std::string scale = ctx.graph.scalar(m.scale(), ctx.dtype, path + ".scale");
  attn = {ctx.graph.op("Mul", {attn.name, scale}, {}, path), attn.sample * m.scale()};
  attn = {ctx.graph.op("Softmax", {attn.name}, {A::of_int("axis", -1)}, path),
          attn.sample.softmax(-1)};
  const Value attn_t = transpose_last(ctx, attn, path);
  const Value mixed = binary(ctx, "MatMul", v, attn_t, v.sample.matmul(attn_t.sample), path);
  const Value image = reshape(ctx, mixed, {0, c, h, w}, mixed.sample.view({-1, c, h, w}), path);
  const Value v_image = reshape(ctx, v, {0, c, h, w}, v.sample.reshape({-1, c, h, w}), path);
  const Value pe = sub(ctx, m, "pe", v_image, path);
  return sub(ctx, m, "proj", binary(ctx, "Add", image, pe, image.sample + pe.sample, path), path);
}

Value psa_block(EmitContext& ctx, PSABlockImpl& m, const Value& x, const std::string& path) {
  const Value a = sub(ctx, m, "attn", x, path);
  const Value y = m.residual() ? binary(ctx, "Add", x, a, x.sample + a.sample, path) : a;
  const Value f = sub(ctx, m, "ffn", y, path);
  return m.residual() ? binary(ctx, "Add", y, f, y.sample + f.sample, path) : f;
}

Value upsample(EmitContext& ctx, UpsampleImpl& m, const Value& x, const std::string& path) {
  // asymmetric + floor is PyTorch's "nearest" for an integer factor.
  const float s = static_cast<float>(m.scale());
  const std::string scales =
      ctx.graph.initializer(torch::tensor({1.f, 1.f, s, s}), path + ".scales");
  return {ctx.graph.op("Resize", {x.name, "", scales},
                       {A::of_string("mode", "nearest"),
                        A::of_string("coordinate_transformation_mode", "asymmetric"),
                        A::of_string("nearest_mode", "floor")},
                       path),
          m.forward(x.sample)};
}

}  // namespace

torch::nn::Module& child(torch::nn::Module& module, const std::string& name,
                         const std::string& path) {
  const auto children = module.named_children();
  const auto* found = children.find(name);
  if (!found) throw ModelError("ONNX export: " + join(path, name) + " is missing");
  return **found;
}

Value emit_concat(EmitContext& ctx, const std::vector<Value>& parts, int64_t axis,
                  const std::string& hint) {
  std::vector<std::string> names;
  std::vector<torch::Tensor> samples;
  for (const auto& p : parts) {
    names.push_back(p.name);
    samples.push_back(p.sample);
  }
  return {ctx.graph.op("Concat", names, {OnnxAttribute::of_int("axis", axis)}, hint),
          torch::cat(samples, axis)};
}

Value emit_module(EmitContext& ctx, torch::nn::Module& module, const Value& x,
                  const std::string& path) {
  if (auto* m = module.as<ConvImpl>()) return conv(ctx, *m, x, path);
  if (auto* m = module.as<PlainConvImpl>()) return plain_conv(ctx, *m, x, path);
  if (auto* m = module.as<ChainImpl>()) return chain(ctx, *m, x, path);
  if (auto* m = module.as<BottleneckImpl>()) return bottleneck(ctx, *m, x, path);
  if (auto* m = module.as<C2fImpl>()) return c2f(ctx, *m, x, path);
  if (auto* m = module.as<C3Impl>()) return c3(ctx, *m, x, path);
  if (auto* m = module.as<SPPFImpl>()) return sppf(ctx, *m, x, path);
  if (auto* m = module.as<AttentionImpl>()) return attention(ctx, *m, x, path);
  if (auto* m = module.as<PSABlockImpl>()) return psa_block(ctx, *m, x, path);
  if (auto* m = module.as<C2PSAImpl>()) return c2psa(ctx, *m, x, path);
  if (auto* m = module.as<UpsampleImpl>()) return upsample(ctx, *m, x, path);
  throw ModelError(
      "ONNX export: " + path + " is a " + module.name() +
      ", which the exporter does not know; export supports the models/ YAMLs' modules");
}

}  // namespace detrain::exporter
