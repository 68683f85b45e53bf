// See protobuf_wire.h. Numbers are written little-endian by copying their bytes, so this builds
// for little-endian hosts only (x86-64, aarch64), as the rest of detrain's file formats do.
#include "common/protobuf_wire.h"

#include <cstring>

namespace detrain {

void ProtoWriter::varint(uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

// Negative numbers take 10 bytes, as protobuf's int32 and int64 encodings do.
void ProtoWriter::int_field(uint32_t field, int64_t value) {
  tag(field, kVarint);
  varint(static_cast<uint64_t>(value));
}

void ProtoWriter::float_field(uint32_t field, float value) {
  tag(field, kFixed32);
  char bytes[4];
  std::memcpy(bytes, &value, 4);
  out_.append(bytes, 4);
}

void ProtoWriter::double_field(uint32_t field, double value) {
  tag(field, kFixed64);
  char bytes[8];
  std::memcpy(bytes, &value, 8);
  out_.append(bytes, 8);
}

void ProtoWriter::bytes_field(uint32_t field, const std::string& bytes) {
  tag(field, kBytes);
  varint(bytes.size());
  out_ += bytes;
}

}  // namespace detrain
