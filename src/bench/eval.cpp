// See eval.h.
#include "bench/eval.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "bench/abba.h"
#include "common/atomic_file.h"
#include "common/memory.h"
#include "common/scratch_dir.h"
#include "common/strings.h"
#include "common/timer.h"
#include "eval/coco_eval.h"
#include "eval/coco_json.h"
#include "eval/coco_parallel.h"

namespace detrain::bench {

namespace {

// The synthetic case as the files the evaluator reads.
struct Inputs {
  std::string gt_path, results_path;
  size_t results_bytes = 0;
};

Inputs write_inputs(const EvalBenchOptions& options, const std::string& dir) {
  const eval::CocoGroundTruth gt = eval::synth_ground_truth(options.gt);
  eval::SynthDetOptions det_options;
  det_options.seed = options.gt.seed + 1;
  det_options.dets_per_image = options.dets_per_image;
  det_options.score_decimals = 3;
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

std::vector<Step> time_steps(const EvalBenchOptions& options, const Inputs& in, LastRun& last) {
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
        eval::load_results_json(in.results_path, eval::IouType::kBbox, options.threads);
    lap(steps[1]);
    last.detections = dets.size();
    const eval::CocoEvaluator evaluator(last.gt, eval::CocoParams::defaults(eval::IouType::kBbox),
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

}  // namespace

Report bench_eval(const EvalBenchOptions& options) {
  const bool keep = !options.write_json.empty();
  std::optional<ScratchDir> scratch;
  if (keep)
    ensure_writable_dir(options.write_json);
  else
    scratch.emplace("detrain-bench-eval-");
  const Inputs in = write_inputs(options, keep ? options.write_json : scratch->path());
  LastRun last;
  const std::vector<Step> steps = time_steps(options, in, last);

  size_t crowd = 0;
  for (uint8_t c : last.gt.ann_iscrowd) crowd += c;
  const auto rss = peak_resident_memory_bytes();
  const int threads = eval::resolve_threads(options.threads);
  const int repeat = std::max(options.repeat, 1);
  Report report;
  report.title = fmt::format(
      "bench eval: {} images, {} categories, {} GT ({} crowd), {} detections, results JSON {}, "
      "{} threads, median of {}",
      with_thousands(options.gt.images), options.gt.categories,
      with_thousands(static_cast<int64_t>(last.gt.num_annotations())),
      with_thousands(static_cast<int64_t>(crowd)),
      with_thousands(static_cast<int64_t>(last.detections)),
      human_bytes(static_cast<double>(in.results_bytes)), threads, repeat);
  report.head = {{"kind", "eval"},
                 {"images", options.gt.images},
                 {"categories", options.gt.categories},
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
  report.tail = {{"peak_rss_bytes", rss}, {"stats", last.result.stats}};
  report.notes.push_back("peak RSS: " + human_bytes(static_cast<double>(rss)));
  for (const auto& line : last.result.summary_lines()) report.notes.push_back(line);
  if (keep) report.notes.push_back("inputs kept: " + in.gt_path + ", " + in.results_path);
  return report;
}

}  // namespace detrain::bench
