// The few ONNX protobuf messages an exported detector needs (ModelProto, GraphProto, NodeProto,
// AttributeProto, TensorProto, ValueInfoProto), as plain structs, and their encoding in the
// protobuf wire format. Field numbers are onnx.proto's; nothing here parses, only writes, so a
// small hand-written encoder replaces a protobuf dependency.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace detrain::exporter {

// TensorProto.DataType values used here.
enum class OnnxType : int32_t { kFloat = 1, kInt64 = 7, kFloat16 = 10 };

struct OnnxTensor {
  std::string name;
  OnnxType type = OnnxType::kFloat;
  std::vector<int64_t> dims;
  std::string raw;  // little-endian element bytes (raw_data)
};

struct OnnxAttribute {
  enum class Kind { kFloat, kInt, kString, kInts, kTensor };
  std::string name;
  Kind kind = Kind::kInt;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<int64_t> ints;
  OnnxTensor t;

  static OnnxAttribute of_int(std::string name, int64_t value);
  static OnnxAttribute of_float(std::string name, float value);
  static OnnxAttribute of_string(std::string name, std::string value);
  static OnnxAttribute of_ints(std::string name, std::vector<int64_t> values);
};

struct OnnxNode {
  std::string op_type, name;
  std::vector<std::string> inputs, outputs;  // "" marks an omitted optional input
  std::vector<OnnxAttribute> attributes;
};

// A graph input or output: element type and shape; a dimension is a number or a symbol.
struct OnnxValueInfo {
  struct Dim {
    int64_t value = -1;  // >= 0: fixed size
    std::string symbol;  // used when value < 0 (e.g. "batch")
  };
  std::string name;
  OnnxType type = OnnxType::kFloat;
  std::vector<Dim> dims;
};

struct OnnxGraph {
  std::string name;
  std::vector<OnnxNode> nodes;  // topologically sorted
  std::vector<OnnxTensor> initializers;
  std::vector<OnnxValueInfo> inputs, outputs;
};

struct OnnxModel {
  int64_t ir_version = 8;
  int64_t opset = 17;  // of the default domain ai.onnx
  std::string producer_name, producer_version;
  OnnxGraph graph;
  std::vector<std::pair<std::string, std::string>> metadata;  // metadata_props
};

// The ModelProto bytes.
std::string serialize(const OnnxModel& model);

}  // namespace detrain::exporter
