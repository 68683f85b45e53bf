// Logger setup; see log.h.
#include "common/log.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <fstream>

#include "common/errors.h"

namespace detrain {

namespace {
constexpr const char* kConsolePattern = "%H:%M:%S %^%L%$ %v";
constexpr const char* kFilePattern = "%Y-%m-%d %H:%M:%S.%e %L %v";
// A second logger on the run's file sink only (log_file_only), kept in spdlog's registry.
constexpr const char* kFileLogger = "detrain.file";
}  // namespace

void init_logging(const LogOptions& options) {
  auto logger = spdlog::get("detrain");
  if (!logger) {
    auto sink = std::make_shared<spdlog::sinks::stdout_color_sink_mt>();
    sink->set_pattern(kConsolePattern);
    logger = std::make_shared<spdlog::logger>("detrain", sink);
    spdlog::register_logger(logger);
  }
  spdlog::level::level_enum level = spdlog::level::info;
  if (options.verbosity < 0) level = spdlog::level::warn;
  if (options.verbosity > 0) level = spdlog::level::debug;
  if (options.rank > 0) level = std::max(level, spdlog::level::warn);
  logger->set_level(level);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

namespace {

constexpr size_t kCaptureRecords = 500;

// The file keeps info-level lines even when the console is quiet: the logger passes info on
// and the console sinks filter at its former level.
void let_info_through(spdlog::logger& logger) {
  if (logger.level() <= spdlog::level::info) return;
  for (auto& s : logger.sinks()) s->set_level(logger.level());
  logger.set_level(spdlog::level::info);
}

std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> take_capture(spdlog::logger& logger) {
  auto& sinks = logger.sinks();
  for (auto it = sinks.begin(); it != sinks.end(); ++it)
    if (auto ring = std::dynamic_pointer_cast<spdlog::sinks::ringbuffer_sink_mt>(*it)) {
      sinks.erase(it);
      return ring;
    }
  return nullptr;
}

}  // namespace

void start_log_capture() {
  auto logger = spdlog::default_logger();
  take_capture(*logger);
  auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(kCaptureRecords);
  ring->set_pattern(kFilePattern);
  ring->set_level(spdlog::level::info);
  let_info_through(*logger);
  logger->sinks().push_back(ring);
}

void add_log_file(const std::string& path) {
  if (auto ring = take_capture(*spdlog::default_logger())) {
    std::ofstream early(path, std::ios::app);
    for (const auto& line : ring->last_formatted()) early << line;
    if (!early) throw IoError("cannot write log file " + path);
  }
  try {
    auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, /*truncate=*/false);
    sink->set_pattern(kFilePattern);
    sink->set_level(spdlog::level::info);
    auto logger = spdlog::default_logger();
    let_info_through(*logger);
    logger->sinks().push_back(sink);
    // One file logger per process: a later run (tests run several) replaces the earlier one.
    spdlog::drop(kFileLogger);
    auto file_logger = std::make_shared<spdlog::logger>(kFileLogger, sink);
    file_logger->set_level(spdlog::level::info);
    file_logger->flush_on(spdlog::level::info);
    spdlog::register_logger(file_logger);
  } catch (const spdlog::spdlog_ex& e) {
    throw IoError("cannot open log file " + path + ": " + e.what());
  }
}

void log_file_only(const std::string& text) {
  const auto logger = spdlog::get(kFileLogger);
  if (!logger) return;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    logger->info("{}", text.substr(start, end - start));
    start = end + 1;
  }
}

bool stdout_is_tty() { return ::isatty(STDOUT_FILENO) == 1; }

}  // namespace detrain
