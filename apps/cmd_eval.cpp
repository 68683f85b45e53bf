// `detrain eval`: scores a COCO results file against a ground-truth file with the built-in
// pycocotools-exact evaluator, prints pycocotools' summary lines (and a per-class table), and
// optionally writes the stats as JSON.
#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "command_table.h"
#include "commands.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/strings.h"
#include "common/timer.h"
#include "eval/coco_eval.h"
#include "eval/coco_json.h"
#include "eval/coco_parallel.h"
#include "eval/coco_report.h"

namespace detrain::cli {

namespace {

struct EvalArgs {
  std::string gt_path;
  std::string dt_path;
  std::string iou_type = "bbox";
  bool no_cats = false;
  std::vector<double> sigmas;
  std::vector<int64_t> max_dets;
  std::string json_out;
  bool per_class = false;
  int threads = 0;
};

int run_eval(const EvalArgs& args) {
  const eval::IouType type = eval::parse_iou_type(args.iou_type);
  eval::CocoParams params = eval::CocoParams::defaults(type);
  params.use_cats = !args.no_cats;
  if (!args.sigmas.empty()) {
    if (type != eval::IouType::kKeypoints)
      throw ConfigError("--sigmas applies to --iou-type keypoints only");
    params.keypoint_sigmas = args.sigmas;
  }
  if (!args.max_dets.empty()) params.max_dets = args.max_dets;
  eval::validate_coco_params(params);  // refuse a bad request before reading large files
  if (!args.json_out.empty()) {
    const auto parent = std::filesystem::path(args.json_out).parent_path();
    if (!parent.empty()) ensure_writable_dir(parent.string());
  }

  Stopwatch clock;
  const eval::CocoGroundTruth gt = eval::load_ground_truth_json(args.gt_path);
  const double load_gt_s = clock.seconds();
  spdlog::info("ground truth {}: {} images, {} annotations, {} categories ({:.2f} s)", args.gt_path,
               with_thousands(static_cast<int64_t>(gt.image_ids.size())),
               with_thousands(static_cast<int64_t>(gt.num_annotations())), gt.categories.size(),
               load_gt_s);
  clock.reset();
  const eval::CocoDetections dets = eval::load_results_json(args.dt_path, type);
  const double load_dt_s = clock.seconds();
  spdlog::info("results {}: {} detections ({:.2f} s)", args.dt_path,
               with_thousands(static_cast<int64_t>(dets.size())), load_dt_s);
  if (dets.size() == 0)
    spdlog::warn("{} holds no results: every category with ground truth scores 0", args.dt_path);

  clock.reset();
  const double index_cpu_start = process_cpu_seconds();
  const eval::CocoEvaluator evaluator(gt, params, {args.threads});
  const double index_s = clock.seconds();
  const double index_cpu_s = process_cpu_seconds() - index_cpu_start;
  const eval::CocoEvalResult result = evaluator.evaluate(dets);
  if (result.counts.dropped_unknown_category > 0)
    spdlog::warn(
        "{} results have a category id that is not in the ground truth (e.g. {}) and "
        "were dropped",
        with_thousands(static_cast<int64_t>(result.counts.dropped_unknown_category)),
        result.counts.first_unknown_category);
  const auto& t = result.timing;
  spdlog::info("evaluate {:.3f} s, accumulate {:.3f} s, summarize {:.3f} s ({} iou)",
               index_s + t.prepare_s + t.evaluate_s, t.accumulate_s, t.summarize_s,
               eval::iou_type_name(type));
  for (const auto& line : result.summary_lines()) std::cout << line << "\n";
  if (args.per_class) std::cout << "\n" << eval::per_category_table(result, gt);
  std::cout.flush();

  if (!args.json_out.empty()) {
    const std::vector<std::pair<std::string, double>> timing = {
        {"load_gt", load_gt_s},
        {"load_results", load_dt_s},
        {"evaluate", index_s + t.prepare_s + t.evaluate_s},
        {"accumulate", t.accumulate_s},
        {"summarize", t.summarize_s},
        {"evaluate_cpu", index_cpu_s + t.prepare_cpu_s + t.evaluate_cpu_s},
        {"accumulate_cpu", t.accumulate_cpu_s},
        {"summarize_cpu", t.summarize_cpu_s}};
    // What this run held at its peak, so far (the bench reads it: its wait4 figure would count
    // the memory of the bench that spawned it).
    const std::vector<std::pair<std::string, double>> process = {
        {"peak_rss_bytes", static_cast<double>(eval::process_peak_rss_bytes())},
        {"threads", static_cast<double>(eval::resolve_threads(args.threads))}};
    write_file_atomic(args.json_out, eval::stats_json(result, timing, process));
    spdlog::info("stats written to {}", args.json_out);
  }
  return 0;
}

}  // namespace

Command add_eval_command(CLI::App& root) {
  auto* app = root.add_subcommand("eval", command_description("eval"));
  auto args = std::make_shared<EvalArgs>();
  app->add_option("--gt", args->gt_path, "COCO ground-truth JSON (instances/person_keypoints)")
      ->required();
  app->add_option("--dt", args->dt_path,
                  "results JSON: a list of {image_id, category_id, bbox "
                  "and/or keypoints, score}")
      ->required();
  app->add_option("--iou-type", args->iou_type, "bbox or keypoints")
      ->check(CLI::IsMember({"bbox", "keypoints"}));
  app->add_flag("--no-cats", args->no_cats,
                "ignore category labels (pycocotools useCats=0; bbox only)");
  app->add_option("--sigmas", args->sigmas,
                  "per-keypoint OKS sigmas, comma separated (default: COCO's 17)")
      ->delimiter(',');
  app->add_option("--max-dets", args->max_dets,
                  "maxDets thresholds, comma separated (default 1,10,100 / 20)")
      ->delimiter(',');
  app->add_option("--json-out", args->json_out,
                  "write stats, per-category AP and timings as JSON (atomically)");
  app->add_flag("--per-class", args->per_class, "print a per-category AP table");
  app->add_option("--threads", args->threads, "worker threads (0: every core)")
      ->check(CLI::Range(0, 1024));
  return {app, [args] { return run_eval(*args); }};
}

}  // namespace detrain::cli
