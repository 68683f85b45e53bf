// Values written as Python's str() writes them, for the ONNX metadata that Ultralytics reads
// back with ast.literal_eval (onnx_metadata.h). Plain C++: no tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace detrain::exporter {

// Python's literal of a string, as repr() writes it: single-quoted unless it holds a ' and no ",
// the quote, the backslash and control characters escaped; other characters (UTF-8 included)
// kept as they are, so ast.literal_eval gives back the same string.
std::string python_string_literal(const std::string& s);

// True or False.
std::string python_bool(bool b);

// [8, 16, 32]: a list of ints.
std::string python_int_list(const std::vector<int64_t>& values);

// {0: 'person', 1: 'bicycle'}: class names by index, all nc of them (the index itself where
// `names` has none).
std::string python_names(int64_t nc, const std::vector<std::string>& names);

}  // namespace detrain::exporter
