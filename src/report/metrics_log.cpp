// metrics.jsonl and results.csv; see metrics_log.h.
#include "report/metrics_log.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/strings.h"

namespace detrain::report {
namespace fs = std::filesystem;

namespace {

const char* const kTimingKeys[] = {"img_s", "data_ms", "step_ms", "mem_gb"};

std::string shortest(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  const auto result = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, result.ptr);
}

// Complete lines of a file; a last line without '\n' was cut by a crash and is left out.
std::vector<std::string> complete_lines(const std::string& path) {
  std::vector<std::string> lines;
  if (!fs::exists(path)) return lines;
  const std::string text = read_file(path);
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    lines.push_back(text.substr(start, end - start));
  return lines;
}

}  // namespace

std::string step_record_line(const StepRecord& r) { return step_record_json(r).dump(); }

nlohmann::ordered_json step_record_json(const StepRecord& r) {
  nlohmann::ordered_json line;
  line["epoch"] = r.epoch;
  line["iter"] = r.iter;
  line["step"] = r.optimizer_steps;
  nlohmann::ordered_json losses = nlohmann::ordered_json::object();
  for (const auto& [name, value] : r.losses) losses[name] = value;
  line["loss"] = losses;
  line["lr"] = r.lr;
  line["instances"] = r.instances;
  line["imgsz"] = r.imgsz;
  line["img_s"] = r.images_per_s;
  line["data_ms"] = r.data_wait_ms;
  line["step_ms"] = r.step_ms;
  line["mem_gb"] = r.memory_gb;
  return line;
}

MetricsJsonl::MetricsJsonl(const std::string& path) : file_(path) {}

void MetricsJsonl::append(const StepRecord& record) {
  file_.append(step_record_line(record) + "\n");
}

std::vector<nlohmann::ordered_json> read_metrics_jsonl(const std::string& path) {
  std::vector<nlohmann::ordered_json> out;
  const auto lines = complete_lines(path);
  for (size_t i = 0; i < lines.size(); ++i) {
    try {
      out.push_back(nlohmann::ordered_json::parse(lines[i]));
    } catch (const nlohmann::json::exception& e) {
      throw IoError(path + ":" + std::to_string(i + 1) + ": not a JSON line (" + e.what() +
                    "); delete the file to start its log afresh");
    }
  }
  return out;
}

void truncate_metrics_jsonl(const std::string& path, int64_t epoch, int64_t iter) {
  if (!fs::exists(path)) return;
  const auto lines = complete_lines(path);
  std::string kept;
  for (size_t i = 0; i < lines.size(); ++i) {
    nlohmann::ordered_json line;
    try {
      line = nlohmann::ordered_json::parse(lines[i]);
    } catch (const nlohmann::json::exception&) {
      throw IoError(path + ":" + std::to_string(i + 1) +
                    ": not a JSON line; cannot resume its log");
    }
    const auto e = line.value("epoch", int64_t{-1});
    const auto it = line.value("iter", int64_t{-1});
    if (e < epoch || (e == epoch && it < iter)) kept += lines[i] + "\n";
  }
  write_file_atomic(path, kept);
}

nlohmann::ordered_json without_timing(nlohmann::ordered_json line) {
  for (const char* key : kTimingKeys) line.erase(key);
  return line;
}

int ResultsTable::column(const std::string& name) const {
  for (size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == name) return static_cast<int>(i);
  return -1;
}

std::vector<double> ResultsTable::series(const std::string& name) const {
  const int c = column(name);
  std::vector<double> out;
  if (c < 0) return out;
  for (const auto& row : rows) out.push_back(row[static_cast<size_t>(c)]);
  return out;
}

void write_results_csv(const std::string& path, const ResultsTable& table) {
  std::string text = join(table.columns, ",") + "\n";
  for (const auto& row : table.rows) {
    std::vector<std::string> cells;
    for (double v : row) cells.push_back(shortest(v));
    text += join(cells, ",") + "\n";
  }
  write_file_atomic(path, text);
}

ResultsTable read_results_csv(const std::string& path) {
  const auto lines = complete_lines(path);
  if (lines.empty()) throw IoError(path + " is empty; expected a results.csv header");
  ResultsTable table;
  table.columns = split(lines[0], ',');
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    const auto cells = split(lines[i], ',');
    if (cells.size() != table.columns.size())
      throw IoError(path + ":" + std::to_string(i + 1) + ": " + std::to_string(cells.size()) +
                    " values for " + std::to_string(table.columns.size()) + " columns");
    std::vector<double> row;
    for (const auto& cell : cells) {
      const std::string s = trim(cell);
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size())
        throw IoError(path + ":" + std::to_string(i + 1) + ": '" + s + "' is not a number");
      row.push_back(v);
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

ResultsCsv::ResultsCsv(std::string path, std::vector<std::string> columns)
    : path_(std::move(path)) {
  table_.columns = std::move(columns);
}

ResultsCsv ResultsCsv::resume(std::string path, std::vector<std::string> columns,
                              int64_t completed_epochs) {
  ResultsCsv csv(std::move(path), std::move(columns));
  if (!fs::exists(csv.path_)) return csv;
  ResultsTable old = read_results_csv(csv.path_);
  if (old.columns != csv.table_.columns)
    throw IoError(csv.path_ + " has other columns than this run writes (" + join(old.columns, ",") +
                  "); move it away to resume");
  for (auto& row : old.rows)
    if (!row.empty() && row[0] <= static_cast<double>(completed_epochs))
      csv.table_.rows.push_back(std::move(row));
  return csv;
}

void ResultsCsv::append(const std::vector<double>& values) {
  if (values.size() != table_.columns.size())
    throw std::invalid_argument("results.csv row has " + std::to_string(values.size()) +
                                " values for " + std::to_string(table_.columns.size()) +
                                " columns");
  table_.rows.push_back(values);
  write_results_csv(path_, table_);
}

}  // namespace detrain::report
