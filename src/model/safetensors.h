// Reading and writing safetensors files (the format of the golden fixtures and of exported
// weights): an 8-byte little-endian header length, a JSON header naming each tensor's dtype,
// shape and byte range, then the raw little-endian data. Tensors come back as CPU tensors in
// their stored dtype; 0-d tensors (shape []) are supported; `__metadata__` is a string map.
#pragma once

#include <torch/types.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace detrain::model {

struct SafetensorsFile {
  std::map<std::string, torch::Tensor> tensors;
  std::vector<std::string> order;               // tensor names in header order
  std::map<std::string, std::string> metadata;  // __metadata__ (values are plain strings)

  // The named tensor; throws ModelError naming the file and the tensor when it is absent.
  const torch::Tensor& at(const std::string& name) const;
  bool contains(const std::string& name) const { return tensors.count(name) > 0; }
  std::string path;
};

// Reads a whole file. Supported dtypes: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL.
// Throws IoError when the file cannot be read and ModelError when it is not valid safetensors
// (truncated, bad JSON, unknown dtype, byte ranges that overlap, leave gaps or do not match
// the shape), each naming the file and, where there is one, the tensor.
SafetensorsFile read_safetensors(const std::string& path);

// Writes tensors (any device; stored contiguous, little-endian) in the given order, atomically.
void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace detrain::model
