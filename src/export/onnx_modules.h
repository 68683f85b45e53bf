// ONNX nodes for the building blocks of layers.h, read from the module tree itself: each
// emitter walks a module's registered children (cv1, cv2, m, ...) in its forward's order and
// also runs the LibTorch module on a sample tensor, so every value knows its shape (Reshape
// targets, split sizes) and the two graphs cannot drift apart in shape.
#pragma once

#include <torch/torch.h>

#include <string>

#include "export/graph_builder.h"

namespace detrain::exporter {

// A graph value and what LibTorch computes for it on the sample input (batch 1).
struct Value {
  std::string name;
  torch::Tensor sample;
};

struct EmitContext {
  GraphBuilder& graph;
  torch::ScalarType dtype = torch::kFloat;  // element type of the network's weights and values
};

// Emits `module` (fused: Conv+BN folded) applied to `x`. `path` is the module's state-dict name,
// used for node and initializer names. Throws ModelError naming `path` for a module type the
// exporter does not know.
Value emit_module(EmitContext& ctx, torch::nn::Module& module, const Value& x,
                  const std::string& path);

// Concatenation along `axis` (samples concatenated alike).
Value emit_concat(EmitContext& ctx, const std::vector<Value>& parts, int64_t axis,
                  const std::string& hint);

// `module`'s registered child `name`; throws ModelError naming path.name when it is absent.
torch::nn::Module& child(torch::nn::Module& module, const std::string& name,
                         const std::string& path);

}  // namespace detrain::exporter
