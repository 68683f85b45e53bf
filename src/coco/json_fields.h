// Typed reads of COCO JSON fields, shared by the annotation reader and the evaluator's results
// reader so that both name a bad value the same way ("annotations[3] 'bbox' must be a number").
// Inline: they run once per number of a file, and the parsers are number-bound.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "coco/annotations.h"
#include "coco/json_cursor.h"

namespace detrain::coco {

// Names a record in error messages; the text is built only when something fails.
struct Where {
  const char* list;  // "images", "categories", "annotations" or "result"
  size_t index;
  std::string record() const {
    return std::string(list) + (list[0] == 'r' ? " " : "[") + std::to_string(index) +
           (list[0] == 'r' ? "" : "]");
  }
  std::string field(const char* name) const { return record() + " '" + name + "'"; }
};

// A finite number: 1e999 overflows to inf, which no box, score or area can be (the NaN and
// Infinity literals are refused by the grammar already).
inline double read_number(JsonCursor& cursor, const Where& where, const char* field) {
  cursor.peek();  // past whitespace: `at` is where the number starts
  const size_t at = cursor.offset();
  const double value = read_number(cursor, [&] { return where.field(field); });
  if (!std::isfinite(value))
    cursor.fail_content(where.field(field) + " overflows a double (" +
                            std::string(value > 0 ? "+" : "-") + "inf); write a finite number",
                        at);
  return value;
}

// An integral value within int64 (ids, image sizes).
inline int64_t read_id(JsonCursor& cursor, const Where& where, const char* field) {
  return read_integer(cursor, field, [&] { return where.field(field); });
}

// Reads an array of numbers into `out` (cleared first).
inline void read_numbers(JsonCursor& cursor, const Where& where, const char* field,
                         std::vector<double>& out) {
  out.clear();
  if (cursor.peek() != '[') cursor.fail_type(where.field(field) + " must be an array of numbers");
  cursor.array([&] { out.push_back(read_number(cursor, where, field)); });
}

// Reads [x, y, w, h]; returns how many values the array held (only 4 is valid).
inline size_t read_box(JsonCursor& cursor, const Where& where, BoxXywh& box) {
  if (cursor.peek() != '[')
    cursor.fail_type(where.field("bbox") + " must be an array [x, y, w, h]");
  double v[4] = {0, 0, 0, 0};
  size_t count = 0;
  cursor.array([&] {
    const double value = read_number(cursor, where, "bbox");
    if (count < 4) v[count] = value;
    ++count;
  });
  box = {v[0], v[1], v[2], v[3]};
  return count;
}

}  // namespace detrain::coco
