// Logging: one spdlog logger with one format for the console and the run's log file.
// Only rank 0 logs below warnings, so multi-process runs print one stream.
#pragma once

#include <string>

namespace detrain {

struct LogOptions {
  int verbosity = 0;  // -1 quiet (warnings and errors), 0 normal, 1 verbose (debug)
  int rank = 0;       // distributed rank; ranks > 0 log warnings and errors only
};

// Installs the console logger as spdlog's default. Safe to call again (replaces settings).
void init_logging(const LogOptions& options);

// Keeps the log records from now on in memory until add_log_file, which writes them first: a
// run's train.log then starts with what was said before its directory existed (data scan,
// model.weights, config notes). Calling it again drops what an earlier call kept.
void start_log_capture();

// Adds a file sink (full timestamps, no colours) to the default logger, e.g. runs/x/train.log.
void add_log_file(const std::string& path);

// Writes `text` to the log file added by add_log_file only, one record per line: what the
// console shows outside spdlog (tables, epoch summaries, the final line), so that train.log
// reads like the console did. No-op before add_log_file.
void log_file_only(const std::string& text);

// True when stdout is an interactive terminal (live progress lines use \r only then).
bool stdout_is_tty();

}  // namespace detrain
