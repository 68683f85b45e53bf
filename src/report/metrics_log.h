// The run's machine-readable logs: metrics.jsonl (one JSON object per logged step) and
// results.csv (one row per epoch, the reference's column names), plus reading them back and
// cutting them to a resume point so a resumed run's files equal an uninterrupted run's
// (timing fields aside, which no two runs share). NaN and Inf are written as JSON null / "nan".
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/atomic_file.h"

namespace detrain::report {

// One logged training step.
struct StepRecord {
  int64_t epoch = 0;  // 0-based epoch
  int64_t iter = 0;   // 0-based iteration in the epoch that produced this line
  int64_t optimizer_steps = 0;
  std::vector<std::pair<std::string, double>> losses;  // running mean per loss, e.g. {"box", ..}
  std::vector<double> lr;                              // [G] per parameter group
  int64_t instances = 0;                               // targets in the batch
  int64_t imgsz = 0;                                   // batch image size (px)
  // Timing and memory (differ between runs; see without_timing).
  double images_per_s = 0;
  double data_wait_ms = 0;  // time the loop waited for this batch
  double step_ms = 0;       // forward + backward (+ optimizer) of this iteration
  double memory_gb = 0;     // CUDA reserved or process resident memory
};

// The JSON line for a record (no newline): {"epoch":..,"iter":..,"step":..,"loss":{..},"lr":[..],
// "instances":..,"imgsz":..,"img_s":..,"data_ms":..,"step_ms":..,"mem_gb":..}.
// Non-finite numbers become null (JSON has no NaN).
std::string step_record_line(const StepRecord& record);
// The same line as a JSON object (numbers as doubles; NaN and Inf stay until dumped).
nlohmann::ordered_json step_record_json(const StepRecord& record);

// Appends lines to metrics.jsonl, each whole or not at all (common/atomic_file.h's AppendLog),
// so a crash can only lose or cut the last line (readers and truncate drop a cut line).
class MetricsJsonl {
 public:
  explicit MetricsJsonl(const std::string& path);  // IoError when it cannot be opened

  void append(const StepRecord& record);
  const std::string& path() const { return file_.path(); }

 private:
  AppendLog file_;
};

// Every complete line of a metrics.jsonl (a missing file gives none). IoError naming the
// line when one does not parse.
std::vector<nlohmann::ordered_json> read_metrics_jsonl(const std::string& path);

// Keeps only the lines logged before iteration `iter` of epoch `epoch` (lexicographic on
// (epoch, iter)) and drops a cut last line; rewrites the file atomically. Call on resume with
// the checkpoint's position before appending.
void truncate_metrics_jsonl(const std::string& path, int64_t epoch, int64_t iter);

// A line without its timing and memory fields, for comparing runs.
nlohmann::ordered_json without_timing(nlohmann::ordered_json line);

// results.csv in memory: a header and one row per epoch. `epoch` is 1-based as in the reference.
struct ResultsTable {
  std::vector<std::string> columns;
  std::vector<std::vector<double>> rows;  // [epochs][columns]

  int column(const std::string& name) const;                  // -1 when absent
  std::vector<double> series(const std::string& name) const;  // one value per row
};

// Rewrites the whole file atomically (values in shortest round-trip form, so reading and
// rewriting gives the same bytes). Throws IoError.
void write_results_csv(const std::string& path, const ResultsTable& table);
// Reads a results.csv (IoError when unreadable or malformed, naming the line).
ResultsTable read_results_csv(const std::string& path);

// The per-epoch writer: holds the table, appends a row and rewrites the file each epoch.
class ResultsCsv {
 public:
  ResultsCsv(std::string path, std::vector<std::string> columns);
  // For a resumed run: reads the existing file (when present and with the same columns) and
  // keeps the rows of epochs <= completed_epochs.
  static ResultsCsv resume(std::string path, std::vector<std::string> columns,
                           int64_t completed_epochs);

  // `values` in column order (size must match). Throws IoError when the write fails.
  void append(const std::vector<double>& values);
  const ResultsTable& table() const { return table_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  ResultsTable table_;
};

}  // namespace detrain::report
