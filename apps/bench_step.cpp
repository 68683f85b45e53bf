// `detrain bench step`: the training step interval with the real loader, measured by running
// the trainer itself (no separate benchmark loop that could drift from it) for --steps
// iterations per precision and reading its per-iteration metrics.jsonl lines; the first
// --warmup iterations are excluded. Prints median and range per precision (with the precision it
// runs as: bf16 falls back to fp32 on x86 CPUs without AVX2), data-wait share and
// images per second.
#include <spdlog/fmt/fmt.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common/errors.h"
#include "common/progress.h"
#include "common/strings.h"
#include "compat/torch_compat.h"
#include "train/metrics_log.h"
#include "train/precision.h"
#include "train/run_dir.h"
#include "train/trainer.h"

namespace detrain::cli {

namespace {

struct StepArgs {
  ConfigArgs config;
  std::string arch, scale, data, device, precisions = "fp32,bf16", nprocs = "1";
  int64_t imgsz = 640, batch = 4, steps = 20, warmup = 3;
  bool json = false;
};

// The runs' directories live in a private temporary folder, removed at the end.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "detrain-bench-step-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw IoError("cannot create a folder in " + pattern);
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct StepResult {
  std::string precision, runs_as;  // runs_as: fp32 where bf16 falls back (train/precision.h)
  int64_t nproc = 1;
  double median_ms = 0, min_ms = 0, max_ms = 0, data_wait_share = 0, images_per_s = 0;
  int64_t steps = 0;
};

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// N ranks: `detrain train --nproc N` in a child process (the launcher needs a process of its
// own); rank 0 writes the metrics read below.
void run_ranks(const StepArgs& a, int64_t nproc, const std::vector<std::string>& overrides) {
  // The shell that runs the command has its own /proc/self/exe: resolve ours first.
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string command = shell_quote(self) + " --quiet train --nproc " + std::to_string(nproc) +
                        " --max-iterations " + std::to_string(a.warmup + a.steps);
  if (!a.config.config_file.empty()) command += " --config " + shell_quote(a.config.config_file);
  for (const auto& o : overrides) command += " " + shell_quote(o);
  command += " > /dev/null 2>&1";
  const int status = std::system(command.c_str());
  // 130: stopped after --max-iterations with a resumable checkpoint, as asked.
  if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 130))
    throw DistributedError("bench step: the " + std::to_string(nproc) +
                           "-rank run failed; run it alone to see why: " + command);
}

StepResult measure(const StepArgs& a, const std::string& precision, int64_t nproc,
                   const std::string& project) {
  std::vector<std::string> overrides = a.config.overrides;
  auto add = [&](const std::string& o) { overrides.push_back(o); };
  if (!a.arch.empty()) add("model.arch=" + a.arch);
  if (!a.scale.empty()) add("model.scale=" + a.scale);
  if (!a.data.empty()) add("data.dataset=" + a.data);
  if (!a.device.empty()) add("runtime.device=" + a.device);
  add("data.imgsz=" + std::to_string(a.imgsz));
  add("data.batch=" + std::to_string(a.batch));
  add("train.precision=" + precision);
  add("train.epochs=1000");  // the run is cut after --steps iterations
  add("train.val=false");
  add("train.plots=false");
  add("train.progress=off");
  add("train.log_every=1");
  add("train.project=" + project);
  const std::string name = precision + "-" + std::to_string(nproc);
  add("train.name=" + name);
  std::string run_dir = project + "/" + name;
  const config::ResolvedConfig resolved = config::resolve(a.config.config_file, overrides);
  if (nproc > 1) {
    run_ranks(a, nproc, overrides);
  } else {
    train::TrainRequest request;
    request.config = resolved;
    request.callbacks.should_stop = train::stop_after(a.warmup + a.steps);
    request.print_config = false;
    run_dir = train::run_training(request).run_dir;
  }
  const train::Precision runs_as = train::effective_precision(
      train::parse_precision(precision), compat::parse_device(resolved.experiment.runtime.device));

  std::vector<double> ms;
  double wait_ms = 0, total_ms = 0;
  int64_t index = 0;
  for (const auto& line : train::read_metrics_jsonl(train::run_paths(run_dir).metrics_jsonl)) {
    if (index++ < a.warmup) continue;
    ms.push_back(line["step_ms"].get<double>());
    wait_ms += line["data_ms"].get<double>();
    total_ms += ms.back();
  }
  if (ms.empty()) throw DataError("bench step: no iteration was measured; raise --steps");
  std::sort(ms.begin(), ms.end());
  StepResult r;
  r.precision = precision;
  r.nproc = nproc;
  r.runs_as = train::precision_name(runs_as);
  r.steps = static_cast<int64_t>(ms.size());
  r.median_ms = ms[ms.size() / 2];
  r.min_ms = ms.front();
  r.max_ms = ms.back();
  r.data_wait_share = total_ms > 0 ? wait_ms / total_ms : 0;
  r.images_per_s = total_ms > 0 ? 1e3 * a.batch * r.steps / total_ms : 0;
  return r;
}

int run_step(const StepArgs& a) {
  const ScratchDir project;
  std::vector<StepResult> results;
  for (const std::string& n : split(a.nprocs, ','))
    for (const std::string& p : split(a.precisions, ','))
      results.push_back(measure(a, p, std::stoll(n), project.path()));
  if (a.json) {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const auto& r : results)
      j.push_back({{"precision", r.precision},
                   {"nproc", r.nproc},
                   {"runs_as", r.runs_as},
                   {"steps", r.steps},
                   {"median_ms", r.median_ms},
                   {"min_ms", r.min_ms},
                   {"max_ms", r.max_ms},
                   {"data_wait_share", r.data_wait_share},
                   {"images_per_s", r.images_per_s}});
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("bench step: batch {}, {} px, {} timed iterations after {} warm-up\n",
                           a.batch, a.imgsz, a.steps, a.warmup);
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : results)
    rows.push_back({r.precision, r.runs_as, std::to_string(r.nproc), fixed(r.median_ms, 1),
                    fixed(r.min_ms, 1), fixed(r.max_ms, 1), fixed(100 * r.data_wait_share, 1),
                    fixed(r.images_per_s, 2)});
  std::cout << format_table(
      {"precision", "runs as", "ranks", "median ms", "min ms", "max ms", "data wait %", "img/s"},
      rows);
  return 0;
}

}  // namespace

Command add_bench_step(CLI::App& bench) {
  auto* app = bench.add_subcommand("step", "training step interval with the real loader");
  auto a = std::make_shared<StepArgs>();
  a->config.add_to(app);
  app->add_option("--model,-m", a->arch, "architecture (default model.arch)");
  app->add_option("--scale", a->scale, "model scale (default model.scale)");
  app->add_option("--data,-d", a->data, "data-set descriptor (default data.dataset)");
  app->add_option("--device", a->device, "cpu, cuda or cuda:N (default runtime.device)");
  app->add_option("--imgsz", a->imgsz, "input size (default 640)")->check(CLI::Range(32, 4096));
  app->add_option("--batch", a->batch, "images per iteration (default 4)")
      ->check(CLI::Range(1, 4096));
  app->add_option("--steps", a->steps, "timed iterations per precision (default 20)")
      ->check(CLI::Range(1, 100000));
  app->add_option("--warmup", a->warmup, "iterations excluded first (default 3)")
      ->check(CLI::Range(0, 1000));
  app->add_option("--precision", a->precisions,
                  "comma list of fp32, bf16, bf16-always (default fp32,bf16)");
  app->add_option("--nproc", a->nprocs,
                  "comma list of rank counts, e.g. 1,2 (data.batch = --batch is the global "
                  "batch; N > 1 runs detrain train --nproc N)");
  app->add_flag("--json", a->json, "print JSON instead of a table");
  return {app, [a]() { return run_step(*a); }};
}

}  // namespace detrain::cli
