// Protobuf wire encoding of the ONNX messages in onnx_proto.h. Every field is written with its
// tag (field number << 3 | wire type) by common/protobuf_wire.h; repeated scalars unpacked.
#include "export/onnx_proto.h"

#include "common/protobuf_wire.h"

namespace detrain::exporter {

namespace {

std::string encode(const OnnxTensor& t) {
  ProtoWriter w;
  for (int64_t d : t.dims) w.int_field(1, d);     // dims
  w.int_field(2, static_cast<int32_t>(t.type));   // data_type
  if (!t.name.empty()) w.bytes_field(8, t.name);  // name
  w.bytes_field(9, t.raw);                        // raw_data
  return w.take();
}

std::string encode(const OnnxAttribute& a) {
  // AttributeProto.AttributeType: FLOAT 1, INT 2, STRING 3, TENSOR 4, INTS 7.
  ProtoWriter w;
  w.bytes_field(1, a.name);
  switch (a.kind) {
    case OnnxAttribute::Kind::kFloat:
      w.float_field(2, a.f);
      w.int_field(20, 1);
      break;
    case OnnxAttribute::Kind::kInt:
      w.int_field(3, a.i);
      w.int_field(20, 2);
      break;
    case OnnxAttribute::Kind::kString:
      w.bytes_field(4, a.s);
      w.int_field(20, 3);
      break;
    case OnnxAttribute::Kind::kTensor:
      w.bytes_field(5, encode(a.t));
      w.int_field(20, 4);
      break;
    case OnnxAttribute::Kind::kInts:
      for (int64_t v : a.ints) w.int_field(8, v);
      w.int_field(20, 7);
      break;
  }
  return w.take();
}

std::string encode(const OnnxNode& n) {
  ProtoWriter w;
  for (const auto& in : n.inputs) w.bytes_field(1, in);
  for (const auto& out : n.outputs) w.bytes_field(2, out);
  if (!n.name.empty()) w.bytes_field(3, n.name);
  w.bytes_field(4, n.op_type);
  for (const auto& a : n.attributes) w.bytes_field(5, encode(a));
  return w.take();
}

std::string encode(const OnnxValueInfo& v) {
  ProtoWriter shape;  // TensorShapeProto: dim = 1 (Dimension: dim_value = 1, dim_param = 2)
  for (const auto& d : v.dims) {
    ProtoWriter dim;
    if (d.value >= 0)
      dim.int_field(1, d.value);
    else
      dim.bytes_field(2, d.symbol);
    shape.bytes_field(1, dim.take());
  }
  ProtoWriter tensor;  // TypeProto.Tensor: elem_type = 1, shape = 2
  tensor.int_field(1, static_cast<int32_t>(v.type));
  tensor.bytes_field(2, shape.take());
  ProtoWriter type;  // TypeProto: tensor_type = 1
  type.bytes_field(1, tensor.take());
  ProtoWriter w;  // ValueInfoProto: name = 1, type = 2
  w.bytes_field(1, v.name);
  w.bytes_field(2, type.take());
  return w.take();
}

std::string encode(const OnnxGraph& g) {
  ProtoWriter w;
  for (const auto& n : g.nodes) w.bytes_field(1, encode(n));
  w.bytes_field(2, g.name);
  for (const auto& t : g.initializers) w.bytes_field(5, encode(t));
  for (const auto& v : g.inputs) w.bytes_field(11, encode(v));
  for (const auto& v : g.outputs) w.bytes_field(12, encode(v));
  return w.take();
}

}  // namespace

OnnxAttribute OnnxAttribute::of_int(std::string name, int64_t value) {
  OnnxAttribute a;
  a.name = std::move(name);
  a.kind = Kind::kInt;
  a.i = value;
  return a;
}

OnnxAttribute OnnxAttribute::of_float(std::string name, float value) {
  OnnxAttribute a;
  a.name = std::move(name);
  a.kind = Kind::kFloat;
  a.f = value;
  return a;
}

OnnxAttribute OnnxAttribute::of_string(std::string name, std::string value) {
  OnnxAttribute a;
  a.name = std::move(name);
  a.kind = Kind::kString;
  a.s = std::move(value);
  return a;
}

OnnxAttribute OnnxAttribute::of_ints(std::string name, std::vector<int64_t> values) {
  OnnxAttribute a;
  a.name = std::move(name);
  a.kind = Kind::kInts;
  a.ints = std::move(values);
  return a;
}

std::string serialize(const OnnxModel& model) {
  ProtoWriter w;
  w.int_field(1, model.ir_version);
  w.bytes_field(2, model.producer_name);
  w.bytes_field(3, model.producer_version);
  w.bytes_field(7, encode(model.graph));
  ProtoWriter opset;  // OperatorSetIdProto: domain = 1 ("" is ai.onnx), version = 2
  opset.bytes_field(1, "");
  opset.int_field(2, model.opset);
  w.bytes_field(8, opset.take());
  for (const auto& [key, value] : model.metadata) {
    ProtoWriter entry;  // StringStringEntryProto: key = 1, value = 2
    entry.bytes_field(1, key);
    entry.bytes_field(2, value);
    w.bytes_field(14, entry.take());
  }
  return w.take();
}

}  // namespace detrain::exporter
