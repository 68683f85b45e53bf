// The hand-written protobuf encoder against bytes worked out by hand from onnx.proto's field
// numbers (the onnxruntime tests cover whole graphs).
#include <catch2/catch.hpp>

#include "export/onnx_proto.h"

using namespace detrain::exporter;

TEST_CASE("ONNX encoder writes ModelProto fields with onnx.proto's tags", "[unit][export]") {
  OnnxModel m;
  m.ir_version = 8;
  m.opset = 17;
  m.producer_name = "d";
  m.producer_version = "1";
  m.graph.name = "g";
  m.metadata = {{"k", "v"}};
  const std::string expected{
      "\x08\x08"  // ir_version = 8 (field 1, varint)
      "\x12\x01"
      "d"  // producer_name (field 2)
      "\x1a\x01"
      "1"  // producer_version (field 3)
      "\x3a\x03\x12\x01"
      "g"                         // graph (field 7) { name (field 2) }
      "\x42\x04\x0a\x00\x10\x11"  // opset_import (field 8) { domain "", version 17 }
      "\x72\x06\x0a\x01"
      "k\x12\x01"
      "v",  // metadata_props (field 14) { key, value }
      27};
  CHECK(serialize(m) == expected);
}

TEST_CASE("ONNX encoder writes negative ints as 10-byte varints", "[unit][export]") {
  OnnxModel m;
  OnnxNode node;
  node.op_type = "Softmax";
  node.attributes.push_back(OnnxAttribute::of_int("axis", -1));
  m.graph.nodes.push_back(node);
  const std::string bytes = serialize(m);
  // AttributeProto { name "axis", i = -1 (field 3): 0x18 then 9 x 0xff and 0x01, type INT }
  const std::string attribute = std::string(
                                    "\x0a\x04"
                                    "axis"
                                    "\x18",
                                    7) +
                                std::string(9, '\xff') + std::string("\x01\xa0\x01\x02", 4);
  CHECK(bytes.find(attribute) != std::string::npos);
}
