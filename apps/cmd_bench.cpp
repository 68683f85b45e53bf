// `detrain bench <kind>`: performance measurements (src/bench/). This file only maps the
// command line onto each kind's option struct and prints the Report the kind returns, as a
// table or, with --json, as JSON.
#include <spdlog/fmt/fmt.h>

#include <iostream>
#include <memory>

#include "bench/eval.h"
#include "bench/loader.h"
#include "bench/loss.h"
#include "bench/model.h"
#include "bench/optim.h"
#include "bench/step.h"
#include "command_table.h"
#include "commands.h"
#include "common/errors.h"
#include "common/strings.h"

namespace detrain::cli {

namespace {

// A registered kind: its subcommand and what produces its report once argv is parsed.
struct Kind {
  CLI::App* app = nullptr;
  std::function<bench::Report()> run;
};

// --model/-m, --imgsz, --batch/-b and --repeats/-r of the per-model kinds (defaults shown as
// the kind sets them).
void add_model_case(CLI::App* app, bench::ModelCase& c, const std::string& batch_help) {
  app->add_option("--model,-m", c.arch, "architecture (default model.arch / model.scale)");
  app->add_option("--imgsz", c.imgsz, fmt::format("square input size (default {})", c.imgsz))
      ->check(CLI::Range(32, 4096));
  app->add_option("--repeats,-r", c.repeats, "timed repeats after one warm-up (default 5)")
      ->check(CLI::Range(1, 1000));
  app->add_option("--batch,-b", c.batch, fmt::format("{} (default {})", batch_help, c.batch))
      ->check(CLI::Range(1, 1024));
}

// A kind whose options are a config plus one option struct.
template <class Options, class Bench>
Kind configured_kind(CLI::App* app, std::shared_ptr<Options> options, Bench run) {
  auto config = std::make_shared<ConfigArgs>();
  config->add_to(app);
  return {app, [=] { return run(config->resolve(), *options); }};
}

Kind add_model(CLI::App& parent) {
  auto* app = parent.add_subcommand("model", "build / forward / backward times of a model");
  auto o = std::make_shared<bench::ModelBenchOptions>();
  add_model_case(app, o->model, "images per forward");
  return configured_kind(app, o, bench::bench_model);
}

Kind add_loss(CLI::App& parent) {
  auto* app = parent.add_subcommand("loss", "label assignment and criterion times of a head");
  auto o = std::make_shared<bench::LossBenchOptions>();
  add_model_case(app, o->model, "images");
  app->add_option("--boxes", o->boxes, "objects per image (default 100)")
      ->check(CLI::Range(0, 100000));
  return configured_kind(app, o, bench::bench_loss);
}

Kind add_optim(CLI::App& parent) {
  auto* app = parent.add_subcommand("optim", "optimizer step time: SGD, MuSGD off, MuSGD exact");
  auto o = std::make_shared<bench::OptimBenchOptions>();
  app->add_option("--model,-m", o->arch, "architecture YAML (default model.arch)");
  app->add_option("--scale", o->scale, "model scale n/s/m/l/x (default model.scale)");
  app->add_option("--steps", o->steps, "timed steps per optimizer (default 50)")
      ->check(CLI::Range(1, 100000));
  app->add_option("--device", o->device, "cpu or cuda[:N] (default runtime.device)");
  app->add_option("--ns-kernel", o->ns_kernels,
                  "Newton-Schulz kernels for the MuSGD exact rows, e.g. emulated,native: one row "
                  "each, interleaved (default optim.ns_kernel)")
      ->delimiter(',')
      ->allow_extra_args(false)  // one comma list: config overrides may follow
      ->check(CLI::IsMember({"auto", "native", "emulated"}));
  return configured_kind(app, o, bench::bench_optim);
}

Kind add_loader(CLI::App& parent) {
  auto* app = parent.add_subcommand("loader", "samples/s of the training data pipeline");
  auto o = std::make_shared<bench::LoaderBenchOptions>();
  auto reference_ms = std::make_shared<double>(0);
  app->add_option("--data,-d", o->data, "data-set descriptor (default data.dataset)");
  app->add_option("--split", o->split, "train or val (default train)")
      ->check(CLI::IsMember({"train", "val"}));
  app->add_option("--imgsz", o->imgsz, "training image size (default 640)")
      ->check(CLI::Range(32, 4096));
  app->add_option("--batch,-b", o->batch, "images per batch (default 16)")
      ->check(CLI::Range(1, 1024));
  app->add_option("--workers", o->workers, "worker counts to measure (default 1,2)")
      ->delimiter(',')
      ->check(CLI::Range(0, 256));
  app->add_option("--repeats,-r", o->repeats, "timed repeats, best kept (default 3)")
      ->check(CLI::Range(1, 100));
  app->add_option("--epochs", o->epochs, "epochs of the RSS check (default 5)")
      ->check(CLI::Range(1, 1000));
  app->add_flag("--no-mosaic", o->no_mosaic, "measure the close_mosaic chain instead");
  auto* reference = app->add_option(
      "--reference-ms", *reference_ms,
      "the reference's CPU ms per sample on the same images, measured just before "
      "(scripts/reference_loader_ms.py), to compare this run with; none is built in");
  reference->check(CLI::PositiveNumber);
  app->add_option("--ranks", o->ranks,
                  "also measure memory per rank: the loader as one process, then as N side by "
                  "side (with data.cache=ram they share one decoded copy)")
      ->check(CLI::Range(1, 64));
  auto as_rank = std::make_shared<int64_t>(-1);
  app->add_option("--as-rank", *as_rank)->group("")->check(CLI::Range(0, 63));
  app->add_option("--rank-dir", o->rank_dir)->group("");
  auto config = std::make_shared<ConfigArgs>();
  config->add_to(app);
  return {app, [=] {
            if (reference->count() > 0) o->reference_ms = *reference_ms;
            if (*as_rank >= 0) o->as_rank = *as_rank;
            o->config_file = config->config_file;
            o->overrides = config->overrides;
            return bench::bench_loader(config->resolve(), *o);
          }};
}

Kind add_eval(CLI::App& parent) {
  auto* app =
      parent.add_subcommand("eval", "COCO evaluator: load, evaluate, accumulate, summarize");
  auto o = std::make_shared<bench::EvalBenchOptions>();
  app->add_option("--images", o->gt.images, "synthetic images")->check(CLI::Range(1, 1000000));
  app->add_option("--cats", o->gt.categories, "categories")->check(CLI::Range(1, 10000));
  app->add_option("--iou-type", o->iou_type, "bbox, or keypoints (one person category, 17 points)")
      ->check(CLI::IsMember({"bbox", "keypoints"}));
  app->add_option("--dets-per-image", o->dets_per_image,
                  "detections per image (default 100 for bbox, 20 for keypoints)")
      ->check(CLI::Range(1, 100000));
  app->add_option("--seed", o->gt.seed, "generator seed");
  app->add_option("--threads", o->threads, "loader and evaluator threads (0: every core)")
      ->check(CLI::Range(0, 1024));
  app->add_option("--repeat", o->repeat, "runs; the median is reported")->check(CLI::Range(1, 100));
  app->add_option("--write-json", o->write_json,
                  "keep gt.json and results.json in this directory (for outside references)");
  return {app, [o] { return bench::bench_eval(*o); }};
}

// "1,2" -> {1, 2}; ConfigError naming the option for anything but positive counts.
std::vector<int64_t> counts_of(const std::string& text, const std::string& option) {
  std::vector<int64_t> counts;
  for (const std::string& part : split(text, ',')) {
    size_t used = 0;
    int64_t n = 0;
    try {
      n = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != part.size() || n < 1)
      throw ConfigError(option + ": '" + part + "' is not a positive count (e.g. 1,2)");
    counts.push_back(n);
  }
  return counts;
}

Kind add_step(CLI::App& parent) {
  auto* app = parent.add_subcommand("step", "training step interval with the real loader");
  auto o = std::make_shared<bench::StepBenchOptions>();
  auto lists = std::make_shared<std::pair<std::string, std::string>>("fp32,bf16", "1");
  auto memory_formats = std::make_shared<std::string>();
  auto config = std::make_shared<ConfigArgs>();
  config->add_to(app);
  app->add_option("--model,-m", o->arch, "architecture (default model.arch)");
  app->add_option("--scale", o->scale, "model scale (default model.scale)");
  app->add_option("--data,-d", o->data, "data-set descriptor (default data.dataset)");
  app->add_option("--device", o->device, "cpu, cuda or cuda:N (default runtime.device)");
  app->add_option("--imgsz", o->imgsz, "input size (default 640)")->check(CLI::Range(32, 4096));
  app->add_option("--batch", o->batch, "images per iteration (default 4)")
      ->check(CLI::Range(1, 4096));
  app->add_option("--steps", o->steps, "timed iterations per precision (default 20)")
      ->check(CLI::Range(1, 100000));
  app->add_option("--warmup", o->warmup, "iterations excluded first (default 3)")
      ->check(CLI::Range(0, 1000));
  app->add_option("--precision", lists->first,
                  "comma list of fp32, bf16, bf16-always, auto (what train chooses here; default "
                  "fp32,bf16)");
  app->add_option("--profile", o->profile,
                  "also list the N operators with the most self time per step (one-rank rows)")
      ->check(CLI::Range(1, 1000));
  app->add_option("--memory-format", *memory_formats,
                  "comma list of auto, nchw, nhwc, one run each (default runtime.memory_format)");
  app->add_option("--nproc", lists->second,
                  "comma list of rank counts, e.g. 1,2 (data.batch = --batch is the global "
                  "batch; N > 1 runs detrain train --nproc N)");
  return {app, [=] {
            o->config_file = config->config_file;
            o->overrides = config->overrides;
            o->precisions = split(lists->first, ',');
            if (!memory_formats->empty()) o->memory_formats = split(*memory_formats, ',');
            for (const std::string& f : o->memory_formats)
              if (!f.empty() && f != "auto" && f != "nchw" && f != "nhwc")
                throw ConfigError("--memory-format: '" + f + "' is not auto, nchw or nhwc");
            o->nprocs = counts_of(lists->second, "--nproc");
            return bench::bench_step(*o);
          }};
}

}  // namespace

Command add_bench_command(CLI::App& root) {
  auto* app = root.add_subcommand("bench", command_description("bench"));
  app->require_subcommand(1);
  app->footer(
      "No reference figure is built in: a comparison comes from this run (variants timed side "
      "by side) or from a measurement passed in (bench loader --reference-ms). Dated "
      "measurements with their machine and command are in docs/perf/.");
  const std::vector<Kind> kinds = {add_model(*app),  add_eval(*app), add_optim(*app),
                                   add_loader(*app), add_loss(*app), add_step(*app)};
  auto json = std::make_shared<bool>(false);
  for (const auto& kind : kinds)
    kind.app->add_flag("--json", *json, "print JSON instead of a table");
  return {app, [kinds, json]() {
            for (const auto& kind : kinds) {
              if (!kind.app->parsed()) continue;
              const bench::Report report = kind.run();
              std::cout << (*json ? bench::render_json(report) : bench::render_text(report));
              return 0;
            }
            return 2;
          }};
}

}  // namespace detrain::cli
