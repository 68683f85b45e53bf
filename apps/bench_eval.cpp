// `detrain bench eval`: times the COCO evaluator on a synthetic COCO-val-like case generated in
// memory (default: 5000 images, 80 categories, ~36k GT with ~1% crowd, 100 detections per
// image = 500k results). The results JSON is written and loaded back to time the loader;
// --write-json keeps both files so an outside reference (pycocotools) can run the same case.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "commands.h"
#include "common/atomic_file.h"
#include "common/strings.h"
#include "common/timer.h"
#include "eval/coco_eval.h"
#include "eval/coco_json.h"
#include "eval/coco_parallel.h"
#include "eval/coco_report.h"
#include "eval/coco_synth.h"

namespace detrain::cli {

namespace {

namespace fs = std::filesystem;

struct BenchEvalArgs {
  int images = 5000;
  int categories = 80;
  int dets_per_image = 100;
  uint64_t seed = 0;
  int threads = 0;
  int repeat = 3;
  std::string write_json;
  bool json = false;
};

double peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

int run_bench_eval(const BenchEvalArgs& args) {
  eval::SynthGtOptions gt_options;
  gt_options.images = args.images;
  gt_options.categories = args.categories;
  gt_options.seed = args.seed;
  const eval::CocoGroundTruth synth_gt = eval::synth_ground_truth(gt_options);
  eval::SynthDetOptions det_options;
  det_options.seed = args.seed + 1;
  det_options.dets_per_image = args.dets_per_image;
  det_options.score_decimals = 3;
  const std::string results_text =
      eval::results_to_json(eval::synth_detections(synth_gt, det_options));
  const std::string gt_text = eval::ground_truth_to_json(synth_gt);

  const bool keep = !args.write_json.empty();
  const fs::path dir =
      keep ? fs::path(args.write_json)
           : fs::temp_directory_path() / ("detrain-bench-eval-" + std::to_string(::getpid()));
  ensure_writable_dir(dir.string());
  const std::string gt_path = (dir / "gt.json").string();
  const std::string results_path = (dir / "results.json").string();
  write_file_atomic(gt_path, gt_text);
  write_file_atomic(results_path, results_text);

  // One row per step: wall and process CPU seconds of every repeat (the median is reported).
  struct Step {
    std::string name;
    std::vector<double> wall, cpu;
  };
  std::vector<Step> steps = {{"load_gt", {}, {}},   {"load_results", {}, {}},
                             {"index_gt", {}, {}},  {"prepare", {}, {}},
                             {"evaluate", {}, {}},  {"accumulate", {}, {}},
                             {"summarize", {}, {}}, {"evaluate_accumulate_summarize", {}, {}}};
  const auto record = [&](size_t step, double wall, double cpu) {
    steps[step].wall.push_back(wall);
    steps[step].cpu.push_back(cpu);
  };
  eval::CocoEvalResult result;
  eval::CocoGroundTruth gt;
  size_t num_dets = 0;
  for (int r = 0; r < std::max(args.repeat, 1); ++r) {
    Stopwatch clock;
    double cpu = eval::process_cpu_seconds();
    const auto lap = [&](size_t step) {
      record(step, clock.seconds(), eval::process_cpu_seconds() - cpu);
      clock.reset();
      cpu = eval::process_cpu_seconds();
    };
    gt = eval::load_ground_truth_json(gt_path);
    lap(0);
    const eval::CocoDetections dets =
        eval::load_results_json(results_path, eval::IouType::kBbox, args.threads);
    lap(1);
    num_dets = dets.size();
    const eval::CocoEvaluator evaluator(gt, eval::CocoParams::defaults(eval::IouType::kBbox),
                                        {args.threads});
    lap(2);
    result = evaluator.evaluate(dets);
    const auto& t = result.timing;
    record(3, t.prepare_s, t.prepare_cpu_s);
    record(4, t.evaluate_s, t.evaluate_cpu_s);
    record(5, t.accumulate_s, t.accumulate_cpu_s);
    record(6, t.summarize_s, t.summarize_cpu_s);
    record(7, steps[2].wall.back() + clock.seconds(),
           steps[2].cpu.back() + eval::process_cpu_seconds() - cpu);
  }
  if (!keep) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }

  size_t crowd = 0;
  for (uint8_t c : gt.ann_iscrowd) crowd += c;
  const double rss = peak_rss_bytes();
  const int threads = eval::resolve_threads(args.threads);
  const int repeat = std::max(args.repeat, 1);
  if (args.json) {
    std::string out = "{\"kind\": \"eval\", \"images\": " + std::to_string(args.images) +
                      ", \"categories\": " + std::to_string(args.categories) +
                      ", \"gt_annotations\": " + std::to_string(gt.num_annotations()) +
                      ", \"crowd\": " + std::to_string(crowd) +
                      ", \"detections\": " + std::to_string(num_dets) +
                      ", \"results_json_bytes\": " + std::to_string(results_text.size()) +
                      ", \"threads\": " + std::to_string(threads) +
                      ", \"repeat\": " + std::to_string(repeat) + ", \"seconds\": {";
    for (size_t i = 0; i < steps.size(); ++i)
      out += (i ? ", \"" : "\"") + steps[i].name +
             "\": {\"wall\": " + eval::shortest_double(median(steps[i].wall)) +
             ", \"cpu\": " + eval::shortest_double(median(steps[i].cpu)) + "}";
    out += "}, \"peak_rss_bytes\": " + std::to_string(static_cast<int64_t>(rss)) + ", \"stats\": [";
    for (size_t i = 0; i < result.stats.size(); ++i)
      out += (i ? ", " : "") + eval::shortest_double(result.stats[i]);
    out += "]}\n";
    std::cout << out;
    return 0;
  }
  std::printf(
      "bench eval: %s images, %d categories, %s GT (%s crowd), %s detections, results "
      "JSON %s, %d threads, median of %d\n",
      with_thousands(args.images).c_str(), args.categories,
      with_thousands(static_cast<int64_t>(gt.num_annotations())).c_str(),
      with_thousands(static_cast<int64_t>(crowd)).c_str(),
      with_thousands(static_cast<int64_t>(num_dets)).c_str(),
      human_bytes(static_cast<double>(results_text.size())).c_str(), threads, repeat);
  std::printf("%-32s %10s %10s\n", "step", "wall s", "cpu s");
  for (const auto& step : steps)
    std::printf("%-32s %10.4f %10.4f\n", step.name.c_str(), median(step.wall), median(step.cpu));
  std::printf("%-32s %10s\n", "peak RSS", human_bytes(rss).c_str());
  for (const auto& line : result.summary_lines()) std::printf("%s\n", line.c_str());
  if (keep) std::printf("inputs kept: %s, %s\n", gt_path.c_str(), results_path.c_str());
  return 0;
}

}  // namespace

Command add_bench_eval(CLI::App& bench) {
  auto* app = bench.add_subcommand("eval", "COCO evaluator: load, evaluate, accumulate, summarize");
  auto args = std::make_shared<BenchEvalArgs>();
  app->add_option("--images", args->images, "synthetic images")->check(CLI::Range(1, 1000000));
  app->add_option("--cats", args->categories, "categories")->check(CLI::Range(1, 10000));
  app->add_option("--dets-per-image", args->dets_per_image, "detections per image")
      ->check(CLI::Range(1, 100000));
  app->add_option("--seed", args->seed, "generator seed");
  app->add_option("--threads", args->threads, "loader and evaluator threads (0: every core)")
      ->check(CLI::Range(0, 1024));
  app->add_option("--repeat", args->repeat, "runs; the median is reported")
      ->check(CLI::Range(1, 100));
  app->add_option("--write-json", args->write_json,
                  "keep gt.json and results.json in this directory (for outside references)");
  app->add_flag("--json", args->json, "print one JSON object instead of the table");
  return {app, [args] { return run_bench_eval(*args); }};
}

}  // namespace detrain::cli
