// See python_literal.h. The forms are CPython 3.11's repr() of str, bool, list and dict.
#include "export/python_literal.h"

#include <cstdio>

namespace detrain::exporter {

std::string python_string_literal(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == quote || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += ch;  // printable ASCII, or a byte of a UTF-8 sequence
    }
  }
  return out + quote;
}

std::string python_bool(bool b) { return b ? "True" : "False"; }

std::string python_int_list(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

std::string python_names(int64_t nc, const std::vector<std::string>& names) {
  std::string out = "{";
  for (int64_t c = 0; c < nc; ++c) {
    const std::string name = c < static_cast<int64_t>(names.size()) ? names[c] : std::to_string(c);
    out += (c ? ", " : "") + std::to_string(c) + ": " + python_string_literal(name);
  }
  return out + "}";
}

}  // namespace detrain::exporter
