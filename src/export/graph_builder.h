// Builds an ONNX graph node by node: unique value names, weights as initializers, small int64
// and float constants, and one call per operator. The exporter's module emitters use it; the
// builder knows nothing about YOLO.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "export/onnx_proto.h"

namespace detrain::exporter {

class GraphBuilder {
 public:
  // `opset`: the ai.onnx version the nodes must follow (17 to 21 supported by the callers).
  explicit GraphBuilder(int64_t opset) : opset_(opset) {}

  int64_t opset() const { return opset_; }

  // A weight or constant tensor (CPU copy; float32, float16 or int64) under a name derived from
  // `hint`; returns the value name.
  std::string initializer(const torch::Tensor& t, const std::string& hint);
  // A 1-D int64 constant (shapes, axes, split sizes, k).
  std::string ints(const std::vector<int64_t>& values, const std::string& hint = "ints");
  // A 0-d constant of `dtype` (float32 or float16).
  std::string scalar(double value, torch::ScalarType dtype, const std::string& hint = "scalar");

  // One node with one output; returns its name.
  std::string op(const std::string& type, const std::vector<std::string>& inputs,
                 std::vector<OnnxAttribute> attributes = {}, const std::string& hint = "");
  // One node with `outputs` outputs.
  std::vector<std::string> op_n(const std::string& type, const std::vector<std::string>& inputs,
                                size_t outputs, std::vector<OnnxAttribute> attributes = {},
                                const std::string& hint = "");

  // Renames the producer of `value` so that the graph output reads `name`.
  void rename_output(const std::string& value, const std::string& name);

  OnnxGraph& graph() { return graph_; }

 private:
  std::string fresh(const std::string& hint);

  int64_t opset_;
  int64_t counter_ = 0;
  OnnxGraph graph_;
};

// torch dtype -> ONNX element type (float32, float16, int64); throws for others.
OnnxType onnx_type(torch::ScalarType dtype);

}  // namespace detrain::exporter
