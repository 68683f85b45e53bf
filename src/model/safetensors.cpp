// safetensors I/O; see safetensors.h. Validation follows the format's own rules: byte ranges
// must tile the data section exactly (sorted by offset, no gaps, no overlap, nothing left over).
#include "model/safetensors.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <ostream>

#include "common/atomic_file.h"
#include "common/errors.h"

namespace detrain::model {

namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors I/O assumes a little-endian host");

constexpr uint64_t kMaxHeaderBytes = 100u << 20;

const std::vector<std::pair<std::string, torch::ScalarType>>& dtype_names() {
  static const std::vector<std::pair<std::string, torch::ScalarType>> names{
      {"F64", torch::kFloat64},   {"F32", torch::kFloat32}, {"F16", torch::kFloat16},
      {"BF16", torch::kBFloat16}, {"I64", torch::kInt64},   {"I32", torch::kInt32},
      {"I16", torch::kInt16},     {"I8", torch::kInt8},     {"U8", torch::kUInt8},
      {"BOOL", torch::kBool}};
  return names;
}

std::string dtype_name(torch::ScalarType type) {
  for (const auto& [name, t] : dtype_names())
    if (t == type) return name;
  throw ModelError(std::string("safetensors cannot store dtype ") + c10::toString(type));
}

struct Entry {
  std::string name;
  torch::ScalarType dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

}  // namespace

const torch::Tensor& SafetensorsFile::at(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) throw ModelError(path + ": no tensor named '" + name + "'");
  return it->second;
}

SafetensorsFile read_safetensors(const std::string& path) {
  const std::string bytes = read_file(path);
  auto bad = [&](const std::string& what) {
    return ModelError(path + ": not a valid safetensors file: " + what);
  };
  if (bytes.size() < 8) throw bad("shorter than its 8-byte header length");
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);
  if (header_size > kMaxHeaderBytes || header_size > bytes.size() - 8)
    throw bad("header length " + std::to_string(header_size) + " exceeds the file (" +
              std::to_string(bytes.size()) + " bytes)");
  nlohmann::ordered_json header;
  try {
    header = nlohmann::ordered_json::parse(bytes.begin() + 8,
                                           bytes.begin() + 8 + static_cast<long>(header_size));
  } catch (const nlohmann::json::parse_error& e) {
    throw bad(std::string("header is not JSON (") + e.what() + ")");
  }
  if (!header.is_object()) throw bad("header is not a JSON object");

  SafetensorsFile file;
  file.path = path;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const auto& value = it.value();
    if (name == "__metadata__") {
      if (!value.is_object()) throw bad("__metadata__ is not an object");
      for (auto m = value.begin(); m != value.end(); ++m) {
        if (!m.value().is_string())
          throw bad("__metadata__ value '" + m.key() + "' is not a string");
        file.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    try {
      Entry e;
      e.name = name;
      const std::string dtype = value.at("dtype").get<std::string>();
      auto found = std::find_if(dtype_names().begin(), dtype_names().end(),
                                [&](const auto& d) { return d.first == dtype; });
      if (found == dtype_names().end())
        throw bad("tensor '" + name + "' has unsupported dtype " + dtype);
      e.dtype = found->second;
      e.shape = value.at("shape").get<std::vector<int64_t>>();
      const auto offsets = value.at("data_offsets").get<std::vector<uint64_t>>();
      if (offsets.size() != 2 || offsets[1] < offsets[0])
        throw bad("tensor '" + name + "' has invalid data_offsets");
      e.begin = offsets[0];
      e.end = offsets[1];
      uint64_t numel = 1;
      for (int64_t d : e.shape) {
        if (d < 0) throw bad("tensor '" + name + "' has a negative dimension");
        numel *= static_cast<uint64_t>(d);
      }
      const uint64_t expected = numel * c10::elementSize(e.dtype);
      if (e.end - e.begin != expected)
        throw bad("tensor '" + name + "' spans " + std::to_string(e.end - e.begin) +
                  " bytes but its shape and dtype need " + std::to_string(expected));
      entries.push_back(std::move(e));
    } catch (const nlohmann::json::exception& ex) {
      throw bad("tensor '" + name + "' has a malformed entry (" + ex.what() + ")");
    }
  }

  const uint64_t data_size = bytes.size() - 8 - header_size;
  std::vector<const Entry*> by_offset;
  for (const auto& e : entries) by_offset.push_back(&e);
  std::stable_sort(by_offset.begin(), by_offset.end(),
                   [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
  uint64_t expected_begin = 0;
  for (const Entry* e : by_offset) {
    if (e->begin != expected_begin)
      throw bad("tensor '" + e->name + "' starts at byte " + std::to_string(e->begin) +
                ", expected " + std::to_string(expected_begin) + " (gap or overlap)");
    expected_begin = e->end;
  }
  if (expected_begin != data_size)
    throw bad("tensor data covers " + std::to_string(expected_begin) + " bytes but the file has " +
              std::to_string(data_size) + " (truncated or trailing bytes)");

  const char* data = bytes.data() + 8 + header_size;
  for (const auto& e : entries) {
    auto tensor = torch::empty(e.shape, torch::TensorOptions().dtype(e.dtype));
    if (e.end > e.begin) std::memcpy(tensor.data_ptr(), data + e.begin, e.end - e.begin);
    file.tensors.emplace(e.name, std::move(tensor));
  }
  for (const auto& e : entries) file.order.push_back(e.name);
  return file;
}

void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<torch::Tensor> contiguous;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name == "__metadata__") throw ModelError("'__metadata__' cannot name a tensor");
    auto cpu = tensor.detach().to(torch::kCPU).contiguous();
    const uint64_t size = static_cast<uint64_t>(cpu.numel()) * cpu.element_size();
    header[name] = {{"dtype", dtype_name(cpu.scalar_type())},
                    {"shape", cpu.sizes().vec()},
                    {"data_offsets", {offset, offset + size}}};
    offset += size;
    contiguous.push_back(std::move(cpu));
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  write_file_atomic(path, [&](std::ostream& out) {
    const uint64_t length = text.size();
    out.write(reinterpret_cast<const char*>(&length), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto& t : contiguous)
      out.write(static_cast<const char*>(t.data_ptr()),
                static_cast<std::streamsize>(t.numel() * t.element_size()));
  });
}

}  // namespace detrain::model
