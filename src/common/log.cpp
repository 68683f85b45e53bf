// Logger setup; see log.h.
#include "common/log.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "common/errors.h"

namespace detrain {

namespace {
constexpr const char* kConsolePattern = "%H:%M:%S %^%L%$ %v";
constexpr const char* kFilePattern = "%Y-%m-%d %H:%M:%S.%e %L %v";
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

void add_log_file(const std::string& path) {
  try {
    auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, /*truncate=*/false);
    sink->set_pattern(kFilePattern);
    // The file keeps info-level lines even when the console is quiet.
    sink->set_level(spdlog::level::info);
    auto logger = spdlog::default_logger();
    logger->sinks().push_back(sink);
    if (logger->level() > spdlog::level::info) {
      for (auto& s : logger->sinks())
        if (s != sink) s->set_level(logger->level());
      logger->set_level(spdlog::level::info);
    }
  } catch (const spdlog::spdlog_ex& e) {
    throw IoError("cannot open log file " + path + ": " + e.what());
  }
}

bool stdout_is_tty() { return ::isatty(STDOUT_FILENO) == 1; }

}  // namespace detrain
