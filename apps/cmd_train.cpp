// `detrain train`: resolves the experiment (or takes it from the run being resumed), installs
// the Ctrl-C handler that asks the loop to stop with a resumable checkpoint and the
// train.requeue_signal handler that does the same for a Slurm requeue, and runs it.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>

#include "ckpt/checkpoint.h"
#include "ckpt/initial_weights.h"
#include "command_table.h"
#include "commands.h"
#include "common/errors.h"
#include "common/progress.h"
#include "dist/distributed.h"
#include "dist/launcher.h"
#include "dist/requeue.h"
#include "report/run_dir.h"
#include "train/resume.h"
#include "train/trainer.h"

namespace detrain::cli {

namespace {

// The process-wide flags: a signal handler can reach nothing else. The loop polls them
// between iterations; the launcher (--nproc) polls them to forward the signals to its ranks.
std::atomic<bool> g_stop_requested{false};
std::atomic<bool> g_requeue_requested{false};
std::atomic<int> g_signal_to_forward{0};

extern "C" void on_interrupt(int) { g_stop_requested.store(true); }
extern "C" void on_requeue(int) { g_requeue_requested.store(true); }
extern "C" void on_forwarded(int signal) { g_signal_to_forward.store(signal); }

struct TrainArgs {
  ConfigArgs config;
  std::string data, model, weights;  // -d / -m / -w: data.dataset, model.arch, model.weights
  std::string resume;
  bool force = false;
  int nproc = 1;
  int64_t max_iterations = 0;
  std::string fault_kill;     // "RANK:ITER" (tests only)
  std::string fault_requeue;  // "RANK:ITER" (tests only)
};

// This process's command line without `--nproc N` / `--nproc=N` (from /proc/self/cmdline):
// what each local rank runs.
std::vector<std::string> command_line_without_nproc() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t start = 0; start < raw.size();) {
    const size_t end = raw.find('\0', start);
    args.push_back(raw.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--nproc") {
      ++i;
      continue;
    }
    if (args[i].rfind("--nproc=", 0) == 0) continue;
    out.push_back(args[i]);
  }
  return out;
}

// `--nproc N` (N > 1) outside a distributed launch: this process becomes the launcher.
int launch(const TrainArgs& args) {
  dist::LaunchOptions options;
  options.nproc = args.nproc;
  options.argv = command_line_without_nproc();
  options.interrupt = &g_stop_requested;
  options.forward = &g_signal_to_forward;
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  // Either may be the ranks' train.requeue_signal; they decide what it means.
  std::signal(SIGUSR1, on_forwarded);
  std::signal(SIGUSR2, on_forwarded);
  const int code = dist::launch_local_ranks(options);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  return code;
}

// The hidden fault options of the distributed tests, `--fault-X RANK:ITER`: `fault` runs on that
// rank before its ITER-th iteration of this process, in the job's first attempt only (so a
// torchrun restart or a requeued job runs through).
std::function<void(const train::IterationInfo&)> fault_hook(const std::string& option,
                                                            const std::string& spec,
                                                            std::function<void()> fault) {
  if (spec.empty() || dist::read_dist_env().restarted()) return {};
  long long rank = -1, iter = -1;
  char tail = 0;
  if (std::sscanf(spec.c_str(), "%lld:%lld%c", &rank, &iter, &tail) != 2 || rank < 0 || iter < 0)
    throw ConfigError(option + " " + spec + ": expected RANK:ITER, e.g. 1:3");
  return [rank, iter, fault](const train::IterationInfo& info) {
    if (info.rank == rank && info.iterations_this_process == iter) fault();
  };
}

// --fault-kill: SIGKILL, no clean-up, as a crashed machine would. --fault-requeue: the requeue
// signal sent to the parent process (the --nproc launcher, which forwards it to every rank), as
// Slurm's --signal would.
std::function<void(const train::IterationInfo&)> fault_hooks(const TrainArgs& args,
                                                             int requeue_signal) {
  auto kill = fault_hook("--fault-kill", args.fault_kill, [] { std::raise(SIGKILL); });
  auto requeue = fault_hook("--fault-requeue", args.fault_requeue,
                            [requeue_signal] { ::kill(::getppid(), requeue_signal); });
  if (!kill && !requeue) return {};
  return [kill, requeue](const train::IterationInfo& info) {
    if (kill) kill(info);
    if (requeue) requeue(info);
  };
}

// After the ranks stopped for train.requeue_signal: rank 0 asks Slurm to requeue the job (when
// it runs in one) and says what happened; the process then exits with ExitCode::kRequeued.
std::string requeue_outcome(const train::TrainSummary& s) {
  const std::string saved =
      "stopped for a requeue; a resumable checkpoint is in " + s.run_dir + "/weights/last.ckpt";
  const char* job = std::getenv("SLURM_JOB_ID");
  if (!s.main_rank) return saved;
  if (!job || !*job)
    return saved +
           "; not a Slurm job (no SLURM_JOB_ID): start the same command again with "
           "train.resume=auto (resume=True), or detrain train --resume " +
           s.run_dir;
  const std::string problem = dist::requeue_slurm_job(job);
  if (!problem.empty())
    return saved + "; requeueing Slurm job " + job + " failed (" + problem +
           "): resubmit it; with train.resume=auto it continues the run";
  return saved + "; Slurm job " + std::string(job) +
         " requeued (scontrol requeue), its next start continues the run";
}

// -d / -m / -w as the overrides they stand for, ahead of the section.key=value ones (which win).
std::vector<std::string> overrides_of(const TrainArgs& args) {
  std::vector<std::string> out;
  if (!args.data.empty()) out.push_back("data.dataset=" + args.data);
  if (!args.model.empty()) out.push_back("model.arch=" + args.model);
  if (!args.weights.empty()) out.push_back("model.weights=" + args.weights);
  const std::vector<std::string> typed = args.config.user_overrides();
  out.insert(out.end(), typed.begin(), typed.end());
  return out;
}

int run_train(const TrainArgs& args) {
  const char* world = std::getenv("WORLD_SIZE");
  if (args.nproc > 1 && !(world && *world)) return launch(args);
  const auto overrides = overrides_of(args);
  train::TrainRequest request;
  request.resume = args.resume;
  request.force = args.force;
  if (!args.resume.empty() && !std::filesystem::exists(args.resume))
    throw IoError("--resume " + args.resume +
                  ": no such run directory or checkpoint (give runs/<name> or "
                  "runs/<name>/weights/last.ckpt)");
  if (!args.resume.empty() && args.config.config_file.empty()) {
    // Resume with the run's own args.yaml, else the checkpoint's config (plus overrides given
    // now); the checkpoint is checked first, so a bad one is named as what it is.
    request.config = train::resume_config(args.resume, overrides);
  } else {
    request.config = config::resolve(args.config.config_file, overrides);
    ckpt::adopt_pt_architecture(request.config);
  }
  request.stop = &g_stop_requested;
  request.callbacks.should_stop = train::stop_after(args.max_iterations);
  const int requeue_signal =
      dist::requeue_signal_number(request.config.experiment.train.requeue_signal);
  request.callbacks.before_iteration = fault_hooks(args, requeue_signal);
  request.requeue = &g_requeue_requested;
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  // Left installed after the run: a requeue signal arriving during the last moments must not
  // kill a finished run (the flag is simply no longer read).
  if (requeue_signal) std::signal(requeue_signal, on_requeue);
  const train::TrainSummary s = train::run_training(request);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (s.requeued) throw Error(ExitCode::kRequeued, requeue_outcome(s));
  if (s.interrupted)
    throw InterruptedError("stopped; a resumable checkpoint is in " + s.run_dir +
                           "/weights/last.ckpt (detrain train --resume " + s.run_dir + ")");
  return 0;  // the trainer printed the final summary
}

}  // namespace

Command add_train_command(CLI::App& root) {
  auto* app = root.add_subcommand("train", command_description("train"));
  auto args = std::make_shared<TrainArgs>();
  args->config.add_to(app);
  app->add_option("--data,-d", args->data, "data-set descriptor (data.dataset)");
  app->add_option("--model,-m", args->model,
                  "architecture, e.g. yolo26n, yolo11s-pose or models/yolov8.yaml (model.arch)");
  app->add_option("--weights,-w", args->weights,
                  "initial weights: an Ultralytics .pt, a checkpoint, run directory or "
                  "safetensors (model.weights)");
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
  // Hidden (no group): fault injection for the distributed tests, not a user feature.
  app->add_option("--fault-kill", args->fault_kill,
                  "RANK:ITER: that rank kills itself (SIGKILL) at that iteration")
      ->group("");
  app->add_option("--fault-requeue", args->fault_requeue,
                  "RANK:ITER: that rank sends train.requeue_signal to the --nproc launcher")
      ->group("");
  return {app, [args]() { return run_train(*args); }};
}

}  // namespace detrain::cli
