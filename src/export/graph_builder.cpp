// See graph_builder.h.
#include "export/graph_builder.h"

namespace detrain::exporter {

OnnxType onnx_type(torch::ScalarType dtype) {
  switch (dtype) {
    case torch::kFloat:
      return OnnxType::kFloat;
    case torch::kHalf:
      return OnnxType::kFloat16;
    case torch::kLong:
      return OnnxType::kInt64;
    default:
      TORCH_CHECK(false, "ONNX export supports float32, float16 and int64 tensors, got ", dtype);
  }
}

std::string GraphBuilder::fresh(const std::string& hint) {
  return (hint.empty() ? std::string("v") : hint) + "_" + std::to_string(counter_++);
}

std::string GraphBuilder::initializer(const torch::Tensor& t, const std::string& hint) {
  const auto cpu = t.detach().cpu().contiguous();
  OnnxTensor tensor;
  tensor.name = fresh(hint);
  tensor.type = onnx_type(cpu.scalar_type());
  tensor.dims.assign(cpu.sizes().begin(), cpu.sizes().end());
  tensor.raw.assign(static_cast<const char*>(cpu.data_ptr()), cpu.nbytes());
  graph_.initializers.push_back(std::move(tensor));
  return graph_.initializers.back().name;
}

std::string GraphBuilder::ints(const std::vector<int64_t>& values, const std::string& hint) {
  return initializer(torch::tensor(values, torch::kLong), hint);
}

std::string GraphBuilder::scalar(double value, torch::ScalarType dtype, const std::string& hint) {
  return initializer(torch::scalar_tensor(value, torch::TensorOptions().dtype(dtype)), hint);
}

std::vector<std::string> GraphBuilder::op_n(const std::string& type,
                                            const std::vector<std::string>& inputs, size_t outputs,
                                            std::vector<OnnxAttribute> attributes,
                                            const std::string& hint) {
  OnnxNode node;
  node.op_type = type;
  node.name = fresh((hint.empty() ? type : hint) + "/" + type);
  node.inputs = inputs;
  for (size_t i = 0; i < outputs; ++i) node.outputs.push_back(fresh(hint.empty() ? type : hint));
  node.attributes = std::move(attributes);
  graph_.nodes.push_back(std::move(node));
  return graph_.nodes.back().outputs;
}

std::string GraphBuilder::op(const std::string& type, const std::vector<std::string>& inputs,
                             std::vector<OnnxAttribute> attributes, const std::string& hint) {
  return op_n(type, inputs, 1, std::move(attributes), hint).front();
}

void GraphBuilder::rename_output(const std::string& value, const std::string& name) {
  for (auto& node : graph_.nodes)
    for (auto& out : node.outputs)
      if (out == value) out = name;
  for (auto& node : graph_.nodes)
    for (auto& in : node.inputs)
      if (in == value) in = name;
}

}  // namespace detrain::exporter
