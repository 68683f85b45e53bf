// The protobuf wire format, write side only: tags, varints, fixed-width numbers and
// length-delimited fields, enough for the messages detrain writes itself (ONNX models in
// export/, TensorBoard events in report/) without a protobuf dependency. Nothing here parses.
#pragma once

#include <cstdint>
#include <string>

namespace detrain {

// One message being encoded. Fields come out in the order they are written; a nested message
// is encoded by its own writer and added with bytes_field. Repeated scalars are written
// unpacked (one tag per value), which every parser accepts.
class ProtoWriter {
 public:
  // int32/int64/enum/bool: a varint of the two's complement (a negative number takes 10 bytes).
  void int_field(uint32_t field, int64_t value);
  void float_field(uint32_t field, float value);               // fixed32
  void double_field(uint32_t field, double value);             // fixed64
  void bytes_field(uint32_t field, const std::string& bytes);  // string, bytes, message

  const std::string& bytes() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };
  void varint(uint64_t v);
  void tag(uint32_t field, WireType type) { varint((uint64_t{field} << 3) | type); }

  std::string out_;
};

}  // namespace detrain
