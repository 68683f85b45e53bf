// See tensorboard_log.h. Each call writes its events at once, in one write(): TensorBoard, which
// re-reads a run every few seconds, shows a row as soon as it is logged, and a crash loses at
// most the row being written.
#include "report/tensorboard_log.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "report/metrics_log.h"
#include "report/tensorboard_summaries.h"

namespace detrain::report {
namespace fs = std::filesystem;

namespace {

constexpr const char* kIter = "iter/";

double number(const nlohmann::ordered_json& v) {
  return v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN();
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The text plugin renders Markdown: an indented block keeps the YAML as it is.
std::string as_code_block(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += "    " + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

}  // namespace

Scalars iteration_scalars(const nlohmann::ordered_json& row) {
  Scalars out;
  for (const auto& [key, value] : row.items()) {
    if (key == "epoch" || key == "iter") continue;
    if (key == "loss" && value.is_object()) {
      for (const auto& [name, loss] : value.items())
        out.emplace_back(kIter + name + "_loss", number(loss));
    } else if (key == "lr" && value.is_array()) {
      for (size_t g = 0; g < value.size(); ++g)
        out.emplace_back(kIter + std::string("lr/pg") + std::to_string(g), number(value[g]));
    } else if (key == "step") {
      out.emplace_back(kIter + std::string("optimizer_steps"), number(value));
    } else if (value.is_number() || value.is_null()) {
      out.emplace_back(kIter + key, number(value));
    }
  }
  return out;
}

Scalars epoch_scalars(const std::vector<std::string>& columns, const std::vector<double>& row) {
  Scalars out;
  for (size_t i = 0; i < columns.size() && i < row.size(); ++i)
    if (columns[i] != "epoch") out.emplace_back(columns[i], row[i]);
  return out;
}

std::vector<std::pair<std::string, std::string>> plot_images(const std::string& dir,
                                                             bool validated) {
  std::vector<std::pair<std::string, std::string>> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string stem = entry.path().stem().string();
    if (name == "results.png") {
      out.emplace_back("plots/results", entry.path().string());
    } else if (validated && ((starts_with(name, "confusion_matrix") && ends_with(name, ".png")) ||
                             ends_with(name, "_curve.png"))) {
      out.emplace_back("plots/" + stem, entry.path().string());
    } else if (validated && starts_with(name, "val_batch") && ends_with(name, ".jpg")) {
      out.emplace_back("val_batches/" + stem, entry.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool images_at_epoch(int64_t epoch, bool last_epoch) {
  return last_epoch || (epoch > 0 && (epoch & (epoch - 1)) == 0);
}

ResumeStart resume_start_step(int64_t epochs_done, int64_t first_new_step,
                              int64_t epochs_logged_before) {
  if (epochs_logged_before > epochs_done) return {epochs_done + 1, true};
  return {first_new_step, false};
}

TensorBoardLog::TensorBoardLog(const std::string& run_dir, int64_t batches_per_epoch)
    : file_(run_dir), batches_per_epoch_(batches_per_epoch) {}

int64_t TensorBoardLog::iteration_step(int64_t epoch, int64_t iter) const {
  return epoch * batches_per_epoch_ + iter + 1;
}

void TensorBoardLog::start(const std::string& config_yaml) {
  const double now = wall_time_now();
  file_.write(
      {session_start_event(now, 0), text_event(now, 0, "config", as_code_block(config_yaml))});
}

void TensorBoardLog::resume(int64_t epoch, int64_t iter, const std::string& config_yaml,
                            const std::string& metrics_jsonl, const std::string& results_csv) {
  int64_t epochs_logged = 0;
  if (fs::exists(results_csv)) {
    const ResultsTable before = read_results_csv(results_csv);
    for (double e : before.series("epoch"))
      epochs_logged = std::max(epochs_logged, static_cast<int64_t>(e));
  }
  const int64_t first_new = iteration_step(epoch, iter);
  const ResumeStart start = resume_start_step(epoch, first_new, epochs_logged);
  const double now = wall_time_now();
  std::vector<std::string> events{session_start_event(now, start.step)};
  if (start.replay) {
    for (const auto& row : read_metrics_jsonl(metrics_jsonl)) {
      const int64_t step =
          iteration_step(row.value("epoch", int64_t{0}), row.value("iter", int64_t{0}));
      if (step >= start.step) events.push_back(scalars_event(now, step, iteration_scalars(row)));
    }
  }
  // The config the run continues with, at the step it continues from (step 0 keeps the first).
  events.push_back(text_event(now, first_new, "config", as_code_block(config_yaml)));
  file_.write(events);
}

void TensorBoardLog::rewind(int64_t epoch, int64_t iter) {
  file_.write({session_start_event(wall_time_now(), iteration_step(epoch, iter))});
}

void TensorBoardLog::add_iteration(const nlohmann::ordered_json& row) {
  const int64_t step =
      iteration_step(row.value("epoch", int64_t{0}), row.value("iter", int64_t{0}));
  file_.write({scalars_event(wall_time_now(), step, iteration_scalars(row))});
}

void TensorBoardLog::add_epoch(const std::vector<std::string>& columns,
                               const std::vector<double>& row) {
  const int c =
      static_cast<int>(std::find(columns.begin(), columns.end(), "epoch") - columns.begin());
  const int64_t epoch = c < static_cast<int>(row.size()) ? static_cast<int64_t>(row[c]) : 0;
  file_.write({scalars_event(wall_time_now(), epoch, epoch_scalars(columns, row))});
}

void TensorBoardLog::add_images(int64_t epoch,
                                const std::vector<std::pair<std::string, std::string>>& images) {
  const double now = wall_time_now();
  std::vector<std::string> events;
  for (const auto& [tag, path] : images)
    if (const auto image = read_image_summary(path))
      events.push_back(image_event(now, epoch, tag, *image));
  if (!events.empty()) file_.write(events);
}

}  // namespace detrain::report
