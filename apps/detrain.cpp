// detrain's command line: parses argv, sets up logging, runs one subcommand, and maps errors to
// exit codes (see ExitCode in src/common/errors.h). Nothing else in the project exits.
#include <c10/util/Exception.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <iostream>
#include <vector>

#include "commands.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/malloc_tuning.h"
#include "common/openmp_wait.h"
#include "compat/runtime.h"
#include "usage_hints.h"

namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

int fail(detrain::ExitCode code, const std::string& message) {
  std::cerr << "detrain: error: " << message << "\n";
  return static_cast<int>(code);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace detrain;
  reexec_with_passive_openmp_wait(argc > 1 ? argv[1] : nullptr, argv);
  keep_freed_memory_for_reuse();
  // Under a file-size limit (ulimit -f) a write past it fails with EFBIG, reported like a full
  // disk (exit 5, temporary removed), instead of SIGXFSZ killing the process mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"detrain: train and evaluate YOLO detectors and pose models", "detrain"};
  app.require_subcommand(1);
  app.fallthrough();
  int verbose = 0;
  bool quiet = false;
  app.add_flag("--verbose,-v", verbose, "more log output (debug level)");
  app.add_flag("--quiet,-q", quiet, "warnings and errors only");
  app.set_version_flag("--version", [] { return compat::version_report(); });

  std::vector<cli::Command> commands;
  commands.push_back(cli::add_config_command(app));
  commands.push_back(cli::add_model_command(app));
  commands.push_back(cli::add_bench_command(app));
  commands.push_back(cli::add_eval_command(app));
  commands.push_back(cli::add_train_command(app));
  commands.push_back(cli::add_val_command(app));
  commands.push_back(cli::add_predict_command(app));
  commands.push_back(cli::add_export_command(app));
  commands.push_back(cli::add_data_command(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" that succeed: CLI11 prints them.
    if (e.get_exit_code() == 0) return app.exit(e);
    return fail(ExitCode::kUsage,
                cli::usage_error_message(app, e, std::vector<std::string>(argv + 1, argv + argc)));
  }

  try {
    init_logging(LogOptions{quiet ? -1 : (verbose > 0 ? 1 : 0), 0});
    compat::route_libtorch_messages();
    for (auto& command : commands)
      if (command.app->parsed()) return command.run();
    return fail(ExitCode::kUsage, "no command given (see detrain --help)");
  } catch (const Error& e) {
    return fail(e.code(), e.what());
  } catch (const c10::Error& e) {
    return fail(ExitCode::kInternal, "LibTorch: " + first_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return fail(ExitCode::kInternal, e.what());
  }
}
