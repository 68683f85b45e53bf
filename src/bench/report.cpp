// See report.h.
#include "bench/report.h"

#include <stdexcept>

#include "common/progress.h"

namespace detrain::bench {

namespace {

// The table and notes are indented under the title line.
constexpr const char* kIndent = "  ";

Json row_object(const Report& report, const std::vector<Cell>& row, size_t first) {
  Json object = Json::object();
  for (size_t c = first; c < report.columns.size() && c < row.size(); ++c)
    if (!report.columns[c].key.empty()) object[report.columns[c].key] = row[c].value;
  return object;
}

Json rows_json(const Report& report) {
  if (report.layout == RowsLayout::kArray) {
    Json rows = Json::array();
    for (const auto& row : report.rows) rows.push_back(row_object(report, row, 0));
    return rows;
  }
  Json rows = Json::object();
  for (const auto& row : report.rows)
    rows[row.at(0).value.get<std::string>()] = row_object(report, row, 1);
  return rows;
}

}  // namespace

Cell number(double value, int decimals) { return {value, fixed(value, decimals)}; }

Cell number_or_dash(double value, int decimals) {
  return {value, value > 0 ? fixed(value, decimals) : "-"};
}

Cell integer(int64_t value) { return {value, std::to_string(value)}; }

Cell label(const std::string& text) { return {text, text}; }

Cell text(const std::string& text) { return {nullptr, text}; }

std::string render_text(const Report& report) {
  std::vector<std::string> header;
  for (const auto& column : report.columns)
    if (!column.header.empty()) header.push_back(column.header);
  std::vector<std::vector<std::string>> rows;
  for (const auto& row : report.rows) {
    rows.emplace_back();
    for (size_t c = 0; c < report.columns.size() && c < row.size(); ++c)
      if (!report.columns[c].header.empty()) rows.back().push_back(row[c].text);
  }
  std::string out = report.title.empty() ? "" : report.title + "\n";
  const std::string table = format_table(header, rows);
  for (size_t begin = 0; begin < table.size();) {
    const size_t end = table.find('\n', begin);
    out += kIndent + table.substr(begin, end - begin) + "\n";
    begin = end == std::string::npos ? table.size() : end + 1;
  }
  for (const auto& note : report.notes) out += kIndent + note + "\n";
  return out;
}

std::string render_json(const Report& report) {
  if (report.rows_key.empty()) {
    if (!report.head.empty() || !report.tail.empty())
      throw std::logic_error("bench report: head/tail keys need a rows_key");
    return rows_json(report).dump(2) + "\n";
  }
  Json out = report.head;
  out[report.rows_key] = rows_json(report);
  for (const auto& [key, value] : report.tail.items()) out[key] = value;
  return out.dump(2) + "\n";
}

}  // namespace detrain::bench
