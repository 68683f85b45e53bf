// Typed errors for user-facing failures. Each carries a one-line message that names the file,
// key or record and says what to do; apps/ catches them once and maps them to exit codes.
// Tensor invariants use TORCH_CHECK instead; these are for bad input and bad environments.
#pragma once

#include <stdexcept>
#include <string>

namespace detrain {

// Distinct process exit codes: the README's table (tests/apps/test_exit_codes.cpp checks both).
enum class ExitCode : int {
  kOk = 0,
  kInternal = 1,      // a bug: an exception we did not expect
  kUsage = 2,         // bad command line (CLI11 uses 2 too)
  kConfig = 3,        // a bad key, type or value (experiment or data YAML, override)
  kData = 4,          // the data set: folders or images missing, bad annotations or images
  kIo = 5,            // cannot read/write a file, disk full
  kModel = 6,         // bad model definition, weights or checkpoint
  kNumeric = 7,       // training diverged (NaN/Inf) beyond the configured patience
  kDistributed = 8,   // a rank failed or a collective timed out
  kRequeued = 75,     // stopped by train.requeue_signal: checkpoint written, job requeued
                      // (EX_TEMPFAIL of sysexits.h, "try again later")
  kInterrupted = 130  // Ctrl-C; a resumable checkpoint was written
};

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

struct ConfigError : Error {
  explicit ConfigError(const std::string& m) : Error(ExitCode::kConfig, m) {}
};
struct DataError : Error {
  explicit DataError(const std::string& m) : Error(ExitCode::kData, m) {}
};
struct IoError : Error {
  explicit IoError(const std::string& m) : Error(ExitCode::kIo, m) {}
};
struct ModelError : Error {
  explicit ModelError(const std::string& m) : Error(ExitCode::kModel, m) {}
};
struct NumericError : Error {
  explicit NumericError(const std::string& m) : Error(ExitCode::kNumeric, m) {}
};
struct DistributedError : Error {
  explicit DistributedError(const std::string& m) : Error(ExitCode::kDistributed, m) {}
};
struct InterruptedError : Error {
  explicit InterruptedError(const std::string& m) : Error(ExitCode::kInterrupted, m) {}
};

}  // namespace detrain
