// The Python literals the ONNX metadata is written in (export/python_literal.h): what CPython
// 3.11's repr() prints for each value (typed in by hand from its output), so that Ultralytics'
// ast.literal_eval reads back the same class names, sizes and flags. Torch-free on purpose: a
// LibTorch header included after catch.hpp would replace Catch's CHECK with c10's.
#include <catch2/catch.hpp>

#include "export/python_literal.h"

using namespace detrain::exporter;

TEST_CASE("class names become Python string literals as repr() writes them", "[export][unit]") {
  CHECK(python_string_literal("person") == "'person'");
  CHECK(python_string_literal("") == "''");
  CHECK(python_string_literal("it's") == "\"it's\"");                    // ' inside: "..."
  CHECK(python_string_literal("say \"hi\"") == "'say \"hi\"'");          // " inside: '...'
  CHECK(python_string_literal("both ' and \"") == "'both \\' and \"'");  // both: ' escaped
  CHECK(python_string_literal("back\\slash") == "'back\\\\slash'");
  CHECK(python_string_literal("tab\there") == "'tab\\there'");
  CHECK(python_string_literal("new\nline") == "'new\\nline'");
  CHECK(python_string_literal("bell\x07") == "'bell\\x07'");
  CHECK(python_string_literal("del\x7f") == "'del\\x7f'");
  CHECK(python_string_literal("caf\xc3\xa9") == "'caf\xc3\xa9'");  // UTF-8 kept as it is
}

TEST_CASE("names, lists and flags are written as Python's str() of a dict, list and bool",
          "[export][unit]") {
  CHECK(python_names(3, {"person", "it's"}) == "{0: 'person', 1: \"it's\", 2: '2'}");
  CHECK(python_names(1, {}) == "{0: '0'}");
  CHECK(python_int_list({640, 640}) == "[640, 640]");
  CHECK(python_int_list({}) == "[]");
  CHECK(python_bool(true) == "True");
  CHECK(python_bool(false) == "False");
}
