// `detrain train`: resolves the experiment (or takes it from the run being resumed), installs
// the Ctrl-C handler that asks the loop to stop with a resumable checkpoint, and runs it.
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "common/errors.h"
#include "common/progress.h"
#include "train/checkpoint.h"
#include "train/launcher.h"
#include "train/run_dir.h"
#include "train/trainer.h"

namespace detrain::cli {

namespace {

// The one process-wide flag: a signal handler can reach nothing else. The loop polls it
// between iterations.
std::atomic<bool> g_stop_requested{false};

extern "C" void on_interrupt(int) { g_stop_requested.store(true); }

struct TrainArgs {
  ConfigArgs config;
  std::string resume;
  bool force = false;
  int nproc = 1;
  int64_t max_iterations = 0;
};

// `--nproc N` (N > 1) outside a distributed launch: this process becomes the launcher.
int launch(const TrainArgs& args) {
  train::LaunchOptions options;
  options.nproc = args.nproc;
  options.argv = train::command_line_without_nproc();
  options.interrupt = &g_stop_requested;
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  const int code = train::launch_local_ranks(options);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  return code;
}

int run_train(const TrainArgs& args) {
  const char* world = std::getenv("WORLD_SIZE");
  if (args.nproc > 1 && !(world && *world)) return launch(args);
  train::TrainRequest request;
  request.resume = args.resume;
  request.force = args.force;
  if (!args.resume.empty() && !std::filesystem::exists(args.resume))
    throw IoError("--resume " + args.resume +
                  ": no such run directory or checkpoint (give runs/<name> or "
                  "runs/<name>/weights/last.ckpt)");
  if (!args.resume.empty() && args.config.config_file.empty()) {
    // Resume with the run's own args.yaml (plus any overrides given now).
    const std::string dir =
        std::filesystem::is_directory(args.resume)
            ? args.resume
            : std::filesystem::path(args.resume).parent_path().parent_path().string();
    const std::string saved = train::run_paths(dir).args_yaml;
    if (!std::filesystem::exists(saved))
      throw IoError(saved +
                    " does not exist; pass the run directory (runs/<name>) or its "
                    "weights/last.ckpt, or give --config");
    request.config = config::resolve(saved, args.config.overrides);
  } else {
    request.config = args.config.resolve();
  }
  request.stop = &g_stop_requested;
  request.stop_after_iterations = args.max_iterations;
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  const train::TrainSummary s = train::run_training(request);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (s.interrupted)
    throw InterruptedError("stopped; a resumable checkpoint is in " + s.run_dir +
                           "/weights/last.ckpt (detrain train --resume " + s.run_dir + ")");
  return 0;  // the trainer printed the final summary
}

}  // namespace

Command add_train_command(CLI::App& root) {
  auto* app = root.add_subcommand("train", "train a detector or pose model");
  auto args = std::make_shared<TrainArgs>();
  args->config.add_to(app);
  app->add_option("--resume", args->resume,
                  "continue a run (its directory or weights/last.ckpt) exactly where it stopped");
  app->add_flag("--force", args->force, "resume although the configuration changed");
  app->add_option("--nproc", args->nproc,
                  "start N local ranks (one per GPU, or N CPU processes) that train together; "
                  "data.batch is the global batch")
      ->check(CLI::Range(1, 1024));
  app->add_option("--max-iterations", args->max_iterations,
                  "stop after N iterations of this process with a resumable checkpoint "
                  "(exit 130, as after Ctrl-C): smoke runs and benchmarks")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  return {app, [args]() { return run_train(*args); }};
}

}  // namespace detrain::cli
