// `detrain bench loader`: throughput of the training data pipeline on a real split. Per worker
// count: a fresh loader per repeat (so every sample decodes its own image, as on a data set
// larger than the mosaic cache), samples/s and ms per sample per worker; in the same run a
// decode-only baseline (read + decode + long-side resize, one thread) and the transform chain
// on cached images; then RSS over repeated epochs of one loader.
#include <malloc.h>
#include <spdlog/fmt/fmt.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common/strings.h"
#include "common/timer.h"
#include "compat/runtime.h"
#include "data/coco_records.h"
#include "data/dataset.h"
#include "data/decode.h"
#include "data/loader.h"
#include "data/pipeline.h"

namespace detrain::cli {

namespace {

struct BenchLoaderArgs {
  ConfigArgs config;
  std::string data;
  std::string split = "train";
  int64_t imgsz = 640;
  int64_t batch = 16;
  std::vector<int64_t> workers = {1, 2};
  int repeats = 3;
  int epochs = 5;
  bool no_mosaic = false;
  bool json = false;
};

// CPU time of the whole process (all threads): per-core cost that a busy machine does not
// inflate the way it inflates wall time.
double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

double rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

struct Row {
  std::string what;
  int64_t workers = 0;
  double samples_per_s = 0;
  double ms_per_sample_per_worker = 0;  // wall
  double cpu_ms_per_sample = 0;
  double decodes_per_sample = 0;
};

int run_bench_loader(const BenchLoaderArgs& args) {
  auto resolved = args.config.resolve();
  const auto& ex = resolved.experiment;
  const auto runtime = compat::apply_runtime(ex.runtime);
  const data::DatasetInfo info =
      data::load_dataset(args.data.empty() ? ex.data.dataset : args.data);
  data::RecordOptions record_options;
  record_options.skip_missing = ex.data.skip_missing;
  const auto records = data::load_records(info, args.split, record_options).images;
  const auto n = static_cast<int64_t>(records.size());
  const int imgsz = static_cast<int>(args.imgsz);
  std::vector<Row> rows;

  // Decode-only baseline: every image once per repeat, one thread; the best repeat.
  double decode_ms = 1e300, decode_cpu = 1e300;
  for (int r = 0; r < args.repeats; ++r) {
    Stopwatch watch;
    const double cpu = process_cpu_ms();
    for (const auto& rec : records) data::load_image(rec.file, imgsz, false);
    decode_ms = std::min(decode_ms, watch.millis() / static_cast<double>(n));
    decode_cpu = std::min(decode_cpu, (process_cpu_ms() - cpu) / static_cast<double>(n));
  }
  rows.push_back({"decode + resize only", 1, 1e3 / decode_ms, decode_ms, decode_cpu, 1.0});

  // The transform chain alone: images decoded once into an unbounded cache first (freed
  // before the RSS check below).
  {
    data::ImageCache cache(0);
    data::ImageSource source(records, info.kpt_count, imgsz, false, &cache);
    data::TrainChainOptions chain;
    chain.imgsz = imgsz;
    chain.augment = ex.augment;
    chain.flip_idx = info.flip_idx;
    chain.seed = static_cast<uint64_t>(ex.runtime.seed);
    chain.mosaic_window = static_cast<size_t>(std::min<int64_t>({n, 8 * args.batch, 1000}));
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order[size_t(i)] = i;
    for (int64_t i = 0; i < n; ++i) source.load(i);
    double chain_ms = 1e300, chain_cpu = 0;
    data::ChainTimes stages;
    std::vector<data::Sample> samples(static_cast<size_t>(args.batch));
    double collate_ms = 0;
    for (int r = 0; r < args.repeats; ++r) {
      data::ChainTimes t;
      Stopwatch watch;
      const double cpu = process_cpu_ms();
      double collate = 0;
      for (size_t p = 0; p < order.size(); ++p) {
        samples[p % samples.size()] =
            data::make_train_sample(source, chain, !args.no_mosaic, order, p, r, &t);
        if ((p + 1) % samples.size() != 0) continue;
        const double c = process_cpu_ms();
        data::collate(samples);
        collate += process_cpu_ms() - c;
      }
      const double ms = watch.millis() / static_cast<double>(n);
      if (ms < chain_ms) {
        chain_ms = ms;
        chain_cpu = (process_cpu_ms() - cpu) / static_cast<double>(n);
        stages = t;
        collate_ms = collate;
      }
    }
    rows.push_back({"transforms + collate, cached", 1, 1e3 / chain_ms, chain_ms, chain_cpu, 0.0});
    const std::vector<std::pair<std::string, double>> stage_ms = {
        {"mosaic / letterbox placement", stages.place},
        {"affine warp", stages.warp},
        {"HSV", stages.hsv},
        {"flips", stages.flip},
        {"collate", collate_ms}};
    for (const auto& [what, total] : stage_ms)
      rows.push_back({"  cpu: " + what, 1, 0.0, 0.0, total / static_cast<double>(n), 0.0});
  }

  data::LoaderOptions options;
  options.batch = args.batch;
  options.prefetch = ex.data.prefetch;
  options.seed = static_cast<uint64_t>(ex.runtime.seed);
  options.imgsz = imgsz;
  options.train = true;
  for (const int64_t w : args.workers) {
    options.workers = w;
    double best_s = 1e300, best_cpu = 0, decodes = 0;
    for (int r = 0; r < args.repeats; ++r) {
      data::Loader loader(info, records, ex.augment, options);
      loader.set_mosaic(!args.no_mosaic);
      Stopwatch watch;
      const double cpu = process_cpu_ms();
      loader.start_epoch(r);
      int64_t samples = 0;
      while (auto batch = loader.next()) samples += batch->size();
      const double s = watch.seconds();
      if (s < best_s) {
        best_s = s;
        best_cpu = (process_cpu_ms() - cpu) / static_cast<double>(samples);
        decodes = static_cast<double>(loader.stats().decodes) / static_cast<double>(samples);
      }
    }
    const double per_s = static_cast<double>(n) / best_s;
    rows.push_back(
        {"full chain + collate (loader)", w, per_s,
         1e3 * best_s * static_cast<double>(std::max<int64_t>(w, 1)) / static_cast<double>(n),
         best_cpu, decodes});
  }

  // RSS over repeated epochs of one long-lived loader (most workers), after returning freed
  // heap pages so earlier stages do not blur the trend.
  malloc_trim(0);
  options.workers = *std::max_element(args.workers.begin(), args.workers.end());
  std::vector<double> rss;
  {
    data::Loader loader(info, records, ex.augment, options);
    loader.set_mosaic(!args.no_mosaic);
    for (int e = 0; e < args.epochs; ++e) {
      loader.start_epoch(e);
      while (loader.next()) {
      }
      rss.push_back(rss_bytes());
    }
  }

  const std::string mode = args.no_mosaic ? "letterbox (mosaic off)" : "mosaic";
  if (args.json) {
    nlohmann::ordered_json out{{"data", info.yaml_path},
                               {"split", args.split},
                               {"images", n},
                               {"imgsz", args.imgsz},
                               {"batch", args.batch},
                               {"mode", mode},
                               {"cores", runtime.cores},
                               {"reference_ms_per_sample", 10.4 + 3.4}};
    for (const auto& r : rows)
      out["rows"].push_back({{"stage", r.what},
                             {"workers", r.workers},
                             {"samples_per_s", r.samples_per_s},
                             {"ms_per_sample_per_worker", r.ms_per_sample_per_worker},
                             {"cpu_ms_per_sample", r.cpu_ms_per_sample},
                             {"decodes_per_sample", r.decodes_per_sample}});
    out["rss_bytes_per_epoch"] = rss;
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format(
      "{} ({}, {} images) at {} px, batch {}, {}, {} cores; best of {} repeats\n", info.yaml_path,
      args.split, n, args.imgsz, args.batch, mode, runtime.cores, args.repeats);
  std::cout << fmt::format("  {:<38} {:>7} {:>10} {:>12} {:>12} {:>9}\n", "stage", "workers",
                           "samples/s", "wall ms/s/w", "cpu ms/samp", "decodes");
  auto cell = [](double v, const char* spec) {
    return v > 0 ? fmt::format(fmt::runtime(spec), v) : std::string("-");
  };
  for (const auto& r : rows)
    std::cout << fmt::format(
        "  {:<38} {:>7} {:>10} {:>12} {:>12} {:>9}\n", r.what, r.workers,
        cell(r.samples_per_s, "{:.1f}"), cell(r.ms_per_sample_per_worker, "{:.2f}"),
        cell(r.cpu_ms_per_sample, "{:.2f}"), fmt::format("{:.2f}", r.decodes_per_sample));
  std::cout << fmt::format(
      "  reference (Ultralytics, one process): 13.8 ms/sample (10.4 chain + 3.4 decode); "
      "target <= 4.6\n");
  std::string rss_list;
  for (const double b : rss) rss_list += (rss_list.empty() ? "" : ", ") + human_bytes(b);
  std::cout << fmt::format("  RSS after each of {} epochs ({} workers): {}\n", rss.size(),
                           options.workers, rss_list);
  return 0;
}

}  // namespace

Command add_bench_loader(CLI::App& bench) {
  auto* app = bench.add_subcommand("loader", "samples/s of the training data pipeline");
  auto args = std::make_shared<BenchLoaderArgs>();
  args->config.add_to(app);
  app->add_option("--data,-d", args->data, "data-set descriptor (default data.dataset)");
  app->add_option("--split", args->split, "train or val (default train)")
      ->check(CLI::IsMember({"train", "val"}));
  app->add_option("--imgsz", args->imgsz, "training image size (default 640)")
      ->check(CLI::Range(32, 4096));
  app->add_option("--batch,-b", args->batch, "images per batch (default 16)")
      ->check(CLI::Range(1, 1024));
  app->add_option("--workers", args->workers, "worker counts to measure (default 1,2)")
      ->delimiter(',')
      ->check(CLI::Range(0, 256));
  app->add_option("--repeats,-r", args->repeats, "timed repeats, best kept (default 3)")
      ->check(CLI::Range(1, 100));
  app->add_option("--epochs", args->epochs, "epochs of the RSS check (default 5)")
      ->check(CLI::Range(1, 1000));
  app->add_flag("--no-mosaic", args->no_mosaic, "measure the close_mosaic chain instead");
  app->add_flag("--json", args->json, "print JSON instead of a table");
  return {app, [args]() { return run_bench_loader(*args); }};
}

}  // namespace detrain::cli
