// See eval.h.
#include "bench/eval.h"

#include <spdlog/fmt/fmt.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <utility>

#include "bench/abba.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/memory.h"
#include "common/progress.h"
#include "common/scratch_dir.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "common/timer.h"
#include "eval/coco_eval.h"
#include "eval/coco_json.h"
#include "eval/coco_parallel.h"

namespace detrain::bench {

namespace {

// The reference evaluators, run as `python -c kReferenceScript NAME GT DT IOU_TYPE`. Prints one
// JSON line: the seconds of each stage as the library's pycocotools-style API splits them
// (COCOeval's construction counts in evaluate, as indexing does for detrain) and the stats;
// exit code 3 when the package is not installed. Its peak RSS is the kernel's VmHWM, which exec
// resets (wait4's ru_maxrss would include this bench's own memory, inherited at the spawn).
constexpr const char* kReferenceScript = R"PY(
import contextlib, io, json, sys, time
which, gt_path, dt_path, iou = sys.argv[1:5]
t0 = time.perf_counter()
try:
    if which == "hotcoco":
        from hotcoco import COCO, COCOeval
    else:
        from faster_coco_eval import COCO
        from faster_coco_eval import COCOeval_faster as COCOeval
    from importlib.metadata import version
    package_version = version(which)
except ImportError as e:
    print(json.dumps({"missing": str(e)}))
    sys.exit(3)
t1 = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    gt = COCO(gt_path)
    t2 = time.perf_counter()
    dt = gt.loadRes(dt_path)
    t3 = time.perf_counter()
    c3 = time.process_time()
    ev = COCOeval(gt, dt, iou)
    ev.evaluate()
    t4 = time.perf_counter()
    ev.accumulate()
    t5 = time.perf_counter()
    ev.summarize()
    t6 = time.perf_counter()
    c6 = time.process_time()
peak = 0
with open("/proc/self/status") as status:
    for line in status:
        if line.startswith("VmHWM:"):
            peak = int(line.split()[1]) * 1024
print(json.dumps({"version": package_version, "import": t1 - t0, "load_gt": t2 - t1,
                  "load_results": t3 - t2, "evaluate": t4 - t3, "accumulate": t5 - t4,
                  "summarize": t6 - t5, "evaluate_accumulate_summarize_cpu": c6 - c3,
                  "peak_rss_bytes": peak, "stats": [float(s) for s in ev.stats]}))
)PY";

bool keypoints_case(const EvalBenchOptions& options) { return options.iou_type == "keypoints"; }

eval::SynthGtOptions gt_options(const EvalBenchOptions& options) {
  eval::SynthGtOptions gt = options.gt;
  if (keypoints_case(options)) {
    gt.categories = 1;  // person_keypoints has one category
    gt.keypoints = 17;
  }
  return gt;
}

int dets_per_image(const EvalBenchOptions& options) {
  if (options.dets_per_image > 0) return options.dets_per_image;
  return keypoints_case(options) ? 20 : 100;
}

// The synthetic case as the files the evaluator reads.
struct Inputs {
  std::string gt_path, results_path;
  size_t results_bytes = 0;
};

Inputs write_inputs(const EvalBenchOptions& options, const std::string& dir) {
  const eval::CocoGroundTruth gt = eval::synth_ground_truth(gt_options(options));
  eval::SynthDetOptions det_options;
  det_options.seed = options.gt.seed + 1;
  det_options.dets_per_image = dets_per_image(options);
  det_options.score_decimals = 3;
  det_options.keypoints = keypoints_case(options);
  const std::string results = eval::results_to_json(eval::synth_detections(gt, det_options));
  Inputs in{dir + "/gt.json", dir + "/results.json", results.size()};
  write_file_atomic(in.gt_path, eval::ground_truth_to_json(gt));
  write_file_atomic(in.results_path, results);
  return in;
}

// One row per step: wall and process CPU seconds of every repeat (the median is reported).
struct Step {
  std::string name;
  std::vector<double> wall, cpu;
  void add(double wall_s, double cpu_s) {
    wall.push_back(wall_s);
    cpu.push_back(cpu_s);
  }
};

// What the last repeat produced, for the report's facts.
struct LastRun {
  eval::CocoEvalResult result;
  eval::CocoGroundTruth gt;
  size_t detections = 0;
};

// A /proc/self/status field in bytes (0 when unavailable).
int64_t status_bytes(const char* key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const size_t length = std::strlen(key);
  while (std::getline(status, line))
    if (line.compare(0, length, key) == 0) return std::atoll(line.c_str() + length) * 1024;
  return 0;
}

// The peak RSS the steps add to the process: the kernel's high-water mark is reset first
// (clear_refs 5), so the figure is the evaluator's own whatever ran before (the generator,
// LibTorch's libraries). -1 where the kernel cannot reset it.
struct RssGrowth {
  int64_t before = 0;
  bool reset = false;
  void start() {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
    clear.flush();
    reset = static_cast<bool>(clear);
    before = status_bytes("VmRSS:");
  }
  int64_t peak_growth() const { return reset ? status_bytes("VmHWM:") - before : -1; }
};

std::vector<Step> time_steps(const EvalBenchOptions& options, const Inputs& in, LastRun& last) {
  const eval::IouType type = eval::parse_iou_type(options.iou_type);
  std::vector<Step> steps;
  for (const char* name : {"load_gt", "load_results", "index_gt", "prepare", "evaluate",
                           "accumulate", "summarize", "evaluate_accumulate_summarize"})
    steps.push_back(Step{name, {}, {}});
  for (int r = 0; r < std::max(options.repeat, 1); ++r) {
    Stopwatch clock;
    double cpu = process_cpu_seconds();
    const auto lap = [&](Step& step) {
      step.add(clock.seconds(), process_cpu_seconds() - cpu);
      clock.reset();
      cpu = process_cpu_seconds();
    };
    last.gt = eval::load_ground_truth_json(in.gt_path);
    lap(steps[0]);
    const eval::CocoDetections dets =
        eval::load_results_json(in.results_path, type, options.threads);
    lap(steps[1]);
    last.detections = dets.size();
    const eval::CocoEvaluator evaluator(last.gt, eval::CocoParams::defaults(type),
                                        {options.threads});
    lap(steps[2]);
    last.result = evaluator.evaluate(dets);
    const auto& t = last.result.timing;
    steps[3].add(t.prepare_s, t.prepare_cpu_s);
    steps[4].add(t.evaluate_s, t.evaluate_cpu_s);
    steps[5].add(t.accumulate_s, t.accumulate_cpu_s);
    steps[6].add(t.summarize_s, t.summarize_cpu_s);
    // Indexing the ground truth belongs to the evaluator's cost as a user pays it.
    steps[7].add(steps[2].wall.back() + clock.seconds(),
                 steps[2].cpu.back() + process_cpu_seconds() - cpu);
  }
  return steps;
}

// ---- whole processes --------------------------------------------------------------------------

struct Finished {
  int exit_code = -1;
  double wall_s = 0;
  double cpu_s = 0;  // user + system seconds of the child's threads
};

// Runs a program to completion, its output into `output_path`, and measures it from outside.
Finished run_measured(const std::string& program, const std::vector<std::string>& argv,
                      const std::string& output_path) {
  Finished done;
  Stopwatch clock;
  const int pid = start_program(program, argv, output_path);
  int status = 0;
  rusage usage{};
  while (::wait4(pid, &status, 0, &usage) < 0)
    if (errno != EINTR) throw IoError("waiting for " + program + ": " + std::strerror(errno));
  done.wall_s = clock.seconds();
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
  };
  done.cpu_s = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  done.exit_code = WIFEXITED(status)     ? WEXITSTATUS(status)
                   : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                         : 1;
  return done;
}

// One evaluator run as a process: its stage seconds (medians over the repeats) as it reports
// them, the whole process from outside, and its stats.
// The median of `values` (abba.h's summarize works on any unit).
double median_of(const std::vector<double>& values) {
  return values.empty() ? 0 : summarize(values).median_ms;
}

struct ProcessRow {
  std::string name;
  std::string skipped;  // why there is no figure ("" when it ran)
  std::vector<double> load_gt_s, load_results_s, evaluate_s, accumulate_s, summarize_s;
  std::vector<double> eas_cpu_s, wall_s, cpu_s, rss_bytes;
  std::vector<double> stats;
  std::string version;
  double eas_s() const {
    return median_of(evaluate_s) + median_of(accumulate_s) + median_of(summarize_s);
  }
};

std::string executable_or_empty(const std::filesystem::path& path) {
  return ::access(path.c_str(), X_OK) == 0 ? path.string() : "";
}

std::string self_executable() {
  std::error_code error;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? "" : path.string();
}

// The last line of `output` that holds a JSON object.
std::optional<Json> last_json_line(const std::string& output) {
  std::optional<Json> found;
  for (const std::string& line : split(output, '\n')) {
    if (line.empty() || line[0] != '{') continue;
    try {
      found = Json::parse(line);
    } catch (const Json::exception&) {
    }
  }
  return found;
}

// One run's figures: the stages as the evaluator reports them, its peak RSS as the kernel
// reports it to the child, wall and CPU seconds from outside.
void add_run(ProcessRow& row, const Json& stages, double eas_cpu_s, double peak_rss_bytes,
             const Finished& done) {
  row.load_gt_s.push_back(stages.value("load_gt", 0.0));
  row.load_results_s.push_back(stages.value("load_results", 0.0));
  row.evaluate_s.push_back(stages.value("evaluate", 0.0));
  row.accumulate_s.push_back(stages.value("accumulate", 0.0));
  row.summarize_s.push_back(stages.value("summarize", 0.0));
  row.eas_cpu_s.push_back(eas_cpu_s);
  row.rss_bytes.push_back(peak_rss_bytes);
  row.wall_s.push_back(done.wall_s);
  row.cpu_s.push_back(done.cpu_s);
}

// The `detrain` a user runs: the front-end beside this executable when there is one (this may
// be the LibTorch build the front-end hands bench commands to), else this executable.
std::string detrain_executable() {
  const std::string self = self_executable();
  if (self.empty()) return self;
  const std::string front =
      executable_or_empty(std::filesystem::path(self).parent_path() / "detrain");
  return front.empty() ? self : front;
}

// One `detrain eval` run added to `row`.
void run_detrain_once(const EvalBenchOptions& options, const Inputs& in, const std::string& dir,
                      const std::string& self, ProcessRow& row) {
  const std::string stats_path = dir + "/detrain-stats.json", log = dir + "/detrain-eval.log";
  const Finished done = run_measured(
      self,
      {self, "eval", "--gt", in.gt_path, "--dt", in.results_path, "--iou-type", options.iou_type,
       "--threads", std::to_string(options.threads), "--json-out", stats_path},
      log);
  if (done.exit_code != 0)
    throw DataError("bench eval: `detrain eval` exited with " + std::to_string(done.exit_code) +
                    ": " + read_file(log));
  const Json stats = Json::parse(read_file(stats_path));
  const Json& timing = stats.at("timing_s");
  add_run(row, timing,
          timing.value("evaluate_cpu", 0.0) + timing.value("accumulate_cpu", 0.0) +
              timing.value("summarize_cpu", 0.0),
          stats.at("process").value("peak_rss_bytes", 0.0), done);
  row.stats = stats.at("stats").get<std::vector<double>>();
}

// One run of a reference evaluator (`row.name` is its package) added to `row`; sets
// `row.skipped` instead when it is not installed or fails.
void run_reference_once(const EvalBenchOptions& options, const Inputs& in, const std::string& dir,
                        const std::string& python, ProcessRow& row) {
  const std::string log = dir + "/" + row.name + ".log";
  const Finished done = run_measured(
      python,
      {python, "-c", kReferenceScript, row.name, in.gt_path, in.results_path, options.iou_type},
      log);
  const std::string output = read_file(log);
  if (done.exit_code == 3) {
    row.skipped = "not installed in " + python + " (scripts/setup.sh adds it to .venv-ref)";
    return;
  }
  const std::optional<Json> line = last_json_line(output);
  if (done.exit_code != 0 || !line) {
    row.skipped = "failed (exit " + std::to_string(done.exit_code) +
                  "): " + (output.size() > 300 ? output.substr(output.size() - 300) : output);
    return;
  }
  add_run(row, *line, line->value("evaluate_accumulate_summarize_cpu", 0.0),
          line->value("peak_rss_bytes", 0.0), done);
  row.stats = line->at("stats").get<std::vector<double>>();
  row.version = line->value("version", "");
}

// detrain eval, hotcoco and faster-coco-eval as whole processes, alternated round by round
// (detrain, hotcoco, faster-coco-eval, detrain, ...) so that a change in the machine's state
// during the run (another job, the page cache) falls on every row alike.
std::vector<ProcessRow> time_processes(const EvalBenchOptions& options, const Inputs& in,
                                       const std::string& dir) {
  std::vector<ProcessRow> rows(3);
  rows[0].name = "detrain eval";
  rows[1].name = "hotcoco";
  rows[2].name = "faster-coco-eval";
  const std::string self = detrain_executable();
  if (self.empty()) rows[0].skipped = "cannot find this executable (/proc/self/exe)";
  const std::string python = reference_python();
  for (size_t i = 1; i < rows.size(); ++i)
    if (python.empty())
      rows[i].skipped =
          "no reference Python (run scripts/setup.sh or set DETRAIN_REFERENCE_PYTHON)";
  for (int r = 0; r < std::max(options.repeat, 1); ++r) {
    if (rows[0].skipped.empty()) run_detrain_once(options, in, dir, self, rows[0]);
    for (size_t i = 1; i < rows.size(); ++i)
      if (rows[i].skipped.empty()) run_reference_once(options, in, dir, python, rows[i]);
  }
  return rows;
}

// Per round, the reference's evaluate + accumulate + summarize over detrain's (wall, CPU).
std::pair<std::vector<double>, std::vector<double>> round_ratios(const ProcessRow& detrain,
                                                                 const ProcessRow& reference) {
  std::vector<double> wall, cpu;
  const size_t rounds = std::min(detrain.evaluate_s.size(), reference.evaluate_s.size());
  const auto eas = [](const ProcessRow& row, size_t r) {
    return row.evaluate_s[r] + row.accumulate_s[r] + row.summarize_s[r];
  };
  for (size_t r = 0; r < rounds; ++r) {
    wall.push_back(eas(reference, r) / std::max(eas(detrain, r), 1e-9));
    cpu.push_back(reference.eas_cpu_s[r] / std::max(detrain.eas_cpu_s[r], 1e-9));
  }
  return {wall, cpu};
}

// "equal" when every stat is the same double, otherwise the largest difference.
std::string stats_agreement(const std::vector<double>& stats, const std::vector<double>& expected) {
  if (stats.size() != expected.size()) return "differ (count)";
  double worst = 0;
  for (size_t i = 0; i < stats.size(); ++i)
    worst = std::max(worst, std::fabs(stats[i] - expected[i]));
  return worst == 0 ? "equal" : fmt::format("max diff {:.1e}", worst);
}

std::string seconds_text(double s) { return fixed(s, 3); }

// The process table (text) and its JSON form.
void add_process_rows(const std::vector<ProcessRow>& rows, const std::vector<double>& stats,
                      Report& report) {
  std::vector<std::vector<std::string>> table;
  Json json = Json::array();
  const ProcessRow* detrain = nullptr;
  const ProcessRow* hotcoco = nullptr;
  for (const ProcessRow& row : rows) {
    if (row.name == "detrain eval" && row.skipped.empty()) detrain = &row;
    if (row.name == "hotcoco" && row.skipped.empty()) hotcoco = &row;
    const std::string name = row.name + (row.version.empty() ? "" : " " + row.version);
    if (!row.skipped.empty()) {
      report.notes.push_back(row.name + ": " + row.skipped);
      json.push_back({{"name", row.name}, {"skipped", row.skipped}});
      continue;
    }
    const double peak = median_of(row.rss_bytes);
    const std::string agreement = stats_agreement(row.stats, stats);
    table.push_back(
        {name, seconds_text(median_of(row.load_gt_s)), seconds_text(median_of(row.load_results_s)),
         seconds_text(median_of(row.evaluate_s)), seconds_text(median_of(row.accumulate_s)),
         seconds_text(median_of(row.summarize_s)), seconds_text(row.eas_s()),
         seconds_text(median_of(row.eas_cpu_s)), seconds_text(median_of(row.wall_s)),
         seconds_text(median_of(row.cpu_s)), human_bytes(peak), agreement});
    json.push_back({{"name", row.name},
                    {"version", row.version},
                    {"load_gt_s", median_of(row.load_gt_s)},
                    {"load_results_s", median_of(row.load_results_s)},
                    {"evaluate_s", median_of(row.evaluate_s)},
                    {"accumulate_s", median_of(row.accumulate_s)},
                    {"summarize_s", median_of(row.summarize_s)},
                    {"evaluate_accumulate_summarize_s", row.eas_s()},
                    {"evaluate_accumulate_summarize_cpu_s", median_of(row.eas_cpu_s)},
                    {"process_wall_s", median_of(row.wall_s)},
                    {"process_cpu_s", median_of(row.cpu_s)},
                    {"peak_rss_bytes", static_cast<int64_t>(peak)},
                    {"stats", agreement}});
  }
  report.tail["processes"] = json;
  if (table.empty()) return;
  report.notes.push_back("whole processes on the same files (medians; stats against the above):");
  const std::string text =
      format_table({"process", "load gt", "load dt", "evaluate", "accumulate", "summarize", "e+a+s",
                    "e+a+s cpu", "wall", "cpu", "peak RSS", "stats"},
                   table);
  for (const std::string& line : split(text, '\n'))
    if (!line.empty()) report.notes.push_back("  " + line);
  if (detrain && hotcoco && detrain->eas_s() > 0) {
    report.notes.push_back(fmt::format(
        "evaluate+accumulate+summarize: detrain eval {:.3f} s, hotcoco {:.3f} s: {:.1f}x "
        "(CPU {:.3f} s vs {:.3f} s: {:.1f}x)",
        detrain->eas_s(), hotcoco->eas_s(), hotcoco->eas_s() / detrain->eas_s(),
        median_of(detrain->eas_cpu_s), median_of(hotcoco->eas_cpu_s),
        median_of(hotcoco->eas_cpu_s) / std::max(median_of(detrain->eas_cpu_s), 1e-9)));
    const auto [wall, cpu] = round_ratios(*detrain, *hotcoco);
    if (wall.size() > 1) {
      const auto [wall_lo, wall_hi] = std::minmax_element(wall.begin(), wall.end());
      const auto [cpu_lo, cpu_hi] = std::minmax_element(cpu.begin(), cpu.end());
      report.notes.push_back(fmt::format(
          "  per round ({} rounds, alternated): {:.1f}-{:.1f}x wall, {:.1f}-{:.1f}x CPU",
          wall.size(), *wall_lo, *wall_hi, *cpu_lo, *cpu_hi));
    }
    report.tail["hotcoco_over_detrain_per_round"] = {{"wall", wall}, {"cpu", cpu}};
  }
}

}  // namespace

std::string reference_python() {
  if (const char* env = std::getenv("DETRAIN_REFERENCE_PYTHON"); env && *env) return env;
  const std::string self = self_executable();
  std::vector<std::filesystem::path> candidates;
  if (!self.empty()) {
    const auto dir = std::filesystem::path(self).parent_path();
    candidates.push_back(dir / ".venv-ref/bin/python");
    candidates.push_back(dir.parent_path() / ".venv-ref/bin/python");  // build/ in the checkout
  }
  std::error_code error;
  const auto cwd = std::filesystem::current_path(error);
  if (!error) candidates.push_back(cwd / ".venv-ref/bin/python");
  for (const auto& candidate : candidates)
    if (const std::string found = executable_or_empty(candidate); !found.empty()) return found;
  return "";
}

Report bench_eval(const EvalBenchOptions& options) {
  eval::parse_iou_type(options.iou_type);  // refuses anything but bbox / keypoints
  const bool keep = !options.write_json.empty();
  std::optional<ScratchDir> scratch;
  if (keep)
    ensure_writable_dir(options.write_json);
  else
    scratch.emplace("detrain-bench-eval-");
  const std::string dir = keep ? options.write_json : scratch->path();
  const Inputs in = write_inputs(options, dir);
  LastRun last;
  RssGrowth growth;
  growth.start();
  const std::vector<Step> steps = time_steps(options, in, last);
  const int64_t evaluator_rss = growth.peak_growth();

  std::vector<ProcessRow> processes;
  if (options.processes) processes = time_processes(options, in, dir);

  size_t crowd = 0;
  for (uint8_t c : last.gt.ann_iscrowd) crowd += c;
  const auto rss = peak_resident_memory_bytes();
  const int threads = eval::resolve_threads(options.threads);
  const int repeat = std::max(options.repeat, 1);
  const eval::SynthGtOptions gt = gt_options(options);
  Report report;
  report.title = fmt::format(
      "bench eval ({}): {} images, {} categories, {} GT ({} crowd), {} detections, results JSON "
      "{}, {} threads, median of {}",
      options.iou_type, with_thousands(gt.images), gt.categories,
      with_thousands(static_cast<int64_t>(last.gt.num_annotations())),
      with_thousands(static_cast<int64_t>(crowd)),
      with_thousands(static_cast<int64_t>(last.detections)),
      human_bytes(static_cast<double>(in.results_bytes)), threads, repeat);
  report.head = {{"kind", "eval"},
                 {"iou_type", options.iou_type},
                 {"images", gt.images},
                 {"categories", gt.categories},
                 {"gt_annotations", last.gt.num_annotations()},
                 {"crowd", crowd},
                 {"detections", last.detections},
                 {"results_json_bytes", in.results_bytes},
                 {"threads", threads},
                 {"repeat", repeat}};
  report.rows_key = "seconds";
  report.layout = RowsLayout::kKeyed;
  report.columns = {{"step", "step"}, {"wall s", "wall"}, {"cpu s", "cpu"}};
  for (const auto& step : steps)
    report.rows.push_back({label(step.name), number(summarize(step.wall).median_ms, 4),
                           number(summarize(step.cpu).median_ms, 4)});
  report.tail = {{"peak_rss_bytes", rss},
                 {"evaluator_peak_rss_growth_bytes", evaluator_rss},
                 {"stats", last.result.stats}};
  report.notes.push_back("peak RSS: " + human_bytes(static_cast<double>(rss)) +
                         " (this process: the generator and every library it maps); the "
                         "steps above added " +
                         (evaluator_rss >= 0 ? human_bytes(static_cast<double>(evaluator_rss))
                                             : std::string("? (no clear_refs)")));
  for (const auto& line : last.result.summary_lines()) report.notes.push_back(line);
  add_process_rows(processes, last.result.stats, report);
  if (keep) report.notes.push_back("inputs kept: " + in.gt_path + ", " + in.results_path);
  return report;
}

}  // namespace detrain::bench
