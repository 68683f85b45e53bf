// What every `detrain bench <kind>` returns: a titled table of rows under named columns, with
// the facts of the run and notes. One report renders either as a text table (format_table of
// common/progress.h) or as JSON, so the kinds never print and --json is handled in one place.
//
// JSON layout: the `head` keys, then the rows under `rows_key` (an array of objects, or with
// RowsLayout::kKeyed one object keyed by each row's first cell), then the `tail` keys. An empty
// `rows_key` makes the JSON the bare array of rows (`bench step`'s format; head and tail must
// then be empty). The text layout: the title, the table of the columns that have a header, the
// notes.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace detrain::bench {

using Json = nlohmann::ordered_json;

// A column shows in the table when it has a header and in the JSON rows when it has a key, so
// a figure can be written one way for people and another way for scripts.
struct Column {
  std::string header;  // table header; "" = JSON only
  std::string key;     // JSON key; "" = table only
};

// One cell: the JSON value and the table text of the same figure.
struct Cell {
  Json value;
  std::string text;
};

// A number with `decimals` in the table, the full value in JSON.
Cell number(double value, int decimals);
// As number(), but "-" in the table when value <= 0 (a row that has no such figure).
Cell number_or_dash(double value, int decimals);
Cell integer(int64_t value);
Cell label(const std::string& text);
// Table-only text (for a column without a JSON key).
Cell text(const std::string& text);

enum class RowsLayout { kArray, kKeyed };

struct Report {
  std::string title;  // first line of the table text
  Json head = Json::object();
  std::string rows_key;
  RowsLayout layout = RowsLayout::kArray;
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;  // one cell per column
  Json tail = Json::object();
  std::vector<std::string> notes;  // table text only, one line each after the table
};

std::string render_text(const Report& report);
std::string render_json(const Report& report);  // indented, with a final newline

}  // namespace detrain::bench
