// See step.h.
#include "bench/step.h"

#include <spdlog/fmt/fmt.h>
#include <time.h>

#include "bench/abba.h"
#include "bench/op_profile.h"
#include "common/cores.h"
#include "common/cpu_features.h"
#include "common/errors.h"
#include "common/machine_load.h"
#include "common/openmp_wait.h"
#include "common/progress.h"
#include "common/scratch_dir.h"
#include "common/subprocess.h"
#include "compat/torch_compat.h"
#include "model/channels_last.h"
#include "model/precision.h"
#include "report/metrics_log.h"
#include "report/run_dir.h"
#include "train/trainer.h"

namespace detrain::bench {

namespace {

struct StepResult {
  std::string precision, runs_as;  // runs_as: fp32 where bf16 falls back (train/precision.h)
  std::string memory_format;       // what runtime.memory_format resolved to (nchw or nhwc)
  int64_t nproc = 1;
  Timing timing;
  double thread_cpu_ms = 0;  // median CPU time of the training thread per iteration (1 rank)
  double data_wait_share = 0, images_per_s = 0;
  int64_t steps = 0;
  // --profile: the timed iterations' heaviest operators, their span and the part inside any
  // operator (the rest is the loop's own code and the wait for data).
  std::vector<OpTime> profile;
  double profile_span_ms = 0, profile_in_ops_ms = 0;
  int64_t threads = 0;  // LibTorch intra-op threads of the run (runtime.threads; 0 = every core)
};

// CPU time of the calling thread. A busy machine inflates a step's wall time several times
// over but its CPU time hardly: with runtime.threads=1 the training thread does all of a step's
// LibTorch work, so this compares variants where wall times cannot (docs/perf/).
double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

// The overrides that make a run of `precision` in `memory_format` ("": the config's) a short,
// quiet measurement in `project`.
std::vector<std::string> run_overrides(const StepBenchOptions& o, const std::string& precision,
                                       const std::string& memory_format, const std::string& project,
                                       const std::string& name) {
  std::vector<std::string> overrides = o.overrides;
  const auto add = [&](const std::string& key, const std::string& value) {
    if (!value.empty()) overrides.push_back(key + "=" + value);
  };
  add("model.arch", o.arch);
  add("model.scale", o.scale);
  add("data.dataset", o.data);
  add("runtime.device", o.device);
  add("data.imgsz", std::to_string(o.imgsz));
  add("data.batch", std::to_string(o.batch));
  add("train.precision", precision);
  add("runtime.memory_format", memory_format);
  add("train.epochs", "1000");  // the run is cut after warmup + steps iterations
  add("train.val", "false");
  add("train.plots", "false");
  add("train.progress", "off");
  add("train.log_every", "1");
  add("train.project", project);
  add("train.name", name);
  return overrides;
}

// N ranks: `detrain --quiet train --nproc N ...` as a child process, spawned with an argument
// vector (no shell, so no quoting); rank 0 writes the metrics read below.
void run_ranks(const StepBenchOptions& o, int64_t nproc, const std::vector<std::string>& overrides,
               ScratchDir& scratch, const std::string& name) {
  std::vector<std::string> argv = {"/proc/self/exe",
                                   "--quiet",
                                   "train",
                                   "--nproc",
                                   std::to_string(nproc),
                                   "--max-iterations",
                                   std::to_string(o.warmup + o.steps)};
  if (!o.config_file.empty()) argv.insert(argv.end(), {"--config", o.config_file});
  argv.insert(argv.end(), overrides.begin(), overrides.end());
  const std::string log = scratch.file(name + ".log");
  const int code = run_program("/proc/self/exe", argv, log);
  // 130: stopped after --max-iterations with a resumable checkpoint, as asked.
  if (code != 0 && code != 130) {
    scratch.keep();
    throw DistributedError(
        fmt::format("bench step: the {}-rank run exited with code {}; its "
                    "output is in {}",
                    nproc, code, log));
  }
}

StepResult measure(const StepBenchOptions& o, const std::string& precision,
                   const std::string& memory_format, int64_t nproc, ScratchDir& scratch) {
  const std::string name = precision + "-" + (memory_format.empty() ? "config" : memory_format) +
                           "-" + std::to_string(nproc);
  const auto overrides = run_overrides(o, precision, memory_format, scratch.path(), name);
  const config::ResolvedConfig resolved = config::resolve(o.config_file, overrides);
  std::string run_dir = scratch.path() + "/" + name;
  StepResult r;
  std::vector<double> cpu_ms;  // training thread, from one iteration's start to the next's
  if (nproc > 1) {
    run_ranks(o, nproc, overrides, scratch, name);
  } else {
    train::TrainRequest request;
    request.config = resolved;
    std::unique_ptr<OpProfiler> profiler;  // on the training thread, over the timed iterations
    request.callbacks.should_stop =
        [&, stop = train::stop_after(o.warmup + o.steps)](const train::IterationInfo& info) {
          const bool done = stop(info);
          if (done && profiler) profiler->stop();
          return done;
        };
    double last = -1;
    request.callbacks.before_iteration = [&](const train::IterationInfo& info) {
      const double now = thread_cpu_ms();
      if (last >= 0 && info.iterations_this_process > o.warmup) cpu_ms.push_back(now - last);
      last = now;
      if (o.profile > 0 && !profiler && info.iterations_this_process == o.warmup)
        profiler = std::make_unique<OpProfiler>();
    };
    request.print_config = false;
    run_dir = train::run_training(request).run_dir;
    if (profiler) {
      profiler->stop();
      r.profile = profiler->top(o.profile);
      r.profile_span_ms = profiler->span_ms();
      r.profile_in_ops_ms = profiler->total_self_ms();
    }
  }
  const torch::Device device = compat::parse_device(resolved.experiment.runtime.device);
  const bool threads_follow_load =
      resolved.experiment.runtime.threads == 0 && device.is_cpu() && nproc == 1;
  const model::Precision runs_as =
      model::effective_precision(model::parse_precision(precision), device, threads_follow_load);
  const model::MemoryFormatDecision layout =
      model::choose_memory_format(resolved.experiment.runtime.memory_format, device);

  std::vector<double> ms;
  double wait_ms = 0, total_ms = 0;
  int64_t index = 0;
  for (const auto& line : report::read_metrics_jsonl(report::run_paths(run_dir).metrics_jsonl)) {
    if (index++ < o.warmup) continue;
    ms.push_back(line["step_ms"].get<double>());
    wait_ms += line["data_ms"].get<double>();
    total_ms += ms.back();
  }
  if (ms.empty()) throw DataError("bench step: no iteration was measured; raise --steps");
  r.precision = precision;
  r.nproc = nproc;
  r.runs_as = model::precision_name(runs_as);
  r.memory_format = model::memory_format_name(layout.format);
  r.steps = static_cast<int64_t>(ms.size());
  const int64_t threads = resolved.experiment.runtime.threads;
  r.threads = threads > 0 ? threads : usable_cores();
  // The trainer's start-time answer to busy cores (the load sample is the one it used).
  if (threads_follow_load) r.threads = threads_at_startup_load(static_cast<int>(r.threads));
  r.timing = summarize(ms);
  r.thread_cpu_ms = summarize(cpu_ms).median_ms;
  r.data_wait_share = total_ms > 0 ? wait_ms / total_ms : 0;
  r.images_per_s = total_ms > 0 ? 1e3 * static_cast<double>(o.batch * r.steps) / total_ms : 0;
  return r;
}

// The profile of one row: JSON per operator, and the note lines of the text table.
Json profile_json(const StepResult& r) {
  Json ops = Json::array();
  const double steps = static_cast<double>(r.steps);
  for (const OpTime& t : r.profile)
    ops.push_back({{"op", t.name},
                   {"self_ms_per_step", t.self_ms / steps},
                   {"share", r.profile_span_ms > 0 ? t.self_ms / r.profile_span_ms : 0.0},
                   {"calls_per_step", static_cast<double>(t.calls) / steps}});
  return {{"span_ms_per_step", r.profile_span_ms / steps},
          {"in_ops_ms_per_step", r.profile_in_ops_ms / steps},
          {"ops", ops}};
}

void add_profile_notes(const StepResult& r, std::vector<std::string>& notes) {
  const double steps = static_cast<double>(r.steps);
  notes.push_back(fmt::format(
      "profile, {} {} (self time per step; {:.1f} ms a step under the profiler, {:.1f} % of it "
      "inside operators):",
      r.runs_as, r.memory_format, r.profile_span_ms / steps,
      r.profile_span_ms > 0 ? 100 * r.profile_in_ops_ms / r.profile_span_ms : 0.0));
  for (const OpTime& t : r.profile)
    notes.push_back(fmt::format("  {:<44} {:>8.1f} ms {:>5.1f} % {:>7.1f} calls", t.name,
                                t.self_ms / steps,
                                r.profile_span_ms > 0 ? 100 * t.self_ms / r.profile_span_ms : 0.0,
                                static_cast<double>(t.calls) / steps));
}

}  // namespace

Report bench_step(const StepBenchOptions& options) {
  ScratchDir scratch("detrain-bench-step-");
  Report report;
  report.title = fmt::format("bench step: batch {}, {} px, {} timed iterations after {} warm-up",
                             options.batch, options.imgsz, options.steps, options.warmup);
  // No rows_key: the JSON is the bare array of runs, one object per precision and rank count.
  report.columns = {{"precision", "precision"},
                    {"runs as", "runs_as"},
                    {"memory format", "memory_format"},
                    {"ranks", "nproc"},
                    {"", "steps"},
                    {"median ms", "median_ms"},
                    {"min ms", "min_ms"},
                    {"max ms", "max_ms"},
                    {"thread cpu ms", "thread_cpu_ms"},
                    {"data wait %", "data_wait_share"},
                    {"img/s", "images_per_s"}};
  // What every row ran with (the children inherit the environment that chose the wait policy).
  const std::string isa = cpu_isa_name(cpu_features());
  const std::string openmp = openmp_wait_in_effect();
  report.columns.push_back({"", "isa"});
  report.columns.push_back({"threads", "threads"});
  report.columns.push_back({"", "openmp_wait"});
  if (options.profile > 0) report.columns.push_back({"", "profile"});
  report.notes.push_back(fmt::format("CPU: {}, {}", cpu_model_name(), isa));
  report.notes.push_back("OpenMP wait: " + openmp);
  std::vector<std::string> profile_notes;
  for (const int64_t nproc : options.nprocs)
    for (const std::string& precision : options.precisions)
      for (const std::string& memory_format : options.memory_formats) {
        const StepResult r = measure(options, precision, memory_format, nproc, scratch);
        report.rows.push_back({label(r.precision),
                               label(r.runs_as),
                               label(r.memory_format),
                               integer(r.nproc),
                               integer(r.steps),
                               number(r.timing.median_ms, 1),
                               number(r.timing.min_ms, 1),
                               number(r.timing.max_ms, 1),
                               number_or_dash(r.thread_cpu_ms, 1),
                               {r.data_wait_share, fixed(100 * r.data_wait_share, 1)},
                               number(r.images_per_s, 2),
                               label(isa),
                               integer(r.threads),
                               label(openmp)});
        if (options.profile > 0) {
          // Rows of several ranks run in another process: no profile there (null).
          report.rows.back().push_back({r.profile.empty() ? Json() : profile_json(r), ""});
          if (!r.profile.empty()) add_profile_notes(r, profile_notes);
        }
      }
  report.notes.insert(report.notes.end(), profile_notes.begin(), profile_notes.end());
  return report;
}

}  // namespace detrain::bench
