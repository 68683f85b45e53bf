// See loader.h. Each measurement keeps the best of its repeats: the least disturbed by other
// processes on a shared machine.
#include "bench/loader.h"

#include <malloc.h>
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <opencv2/imgproc.hpp>
#include <thread>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/memory.h"
#include "common/scratch_dir.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "common/timer.h"
#include "compat/runtime.h"
#include "data/coco_records.h"
#include "data/dataset.h"
#include "data/decode.h"
#include "data/hsv.h"
#include "data/loader.h"
#include "data/pipeline.h"
#include "data/scale_warp.h"

namespace detrain::bench {

namespace {

double process_cpu_ms() { return process_cpu_seconds() * 1e3; }

constexpr const char* kLoaderStage = "full chain + collate (loader)";

struct Row {
  std::string stage;
  int64_t workers = 0;
  double samples_per_s = 0;
  double ms_per_sample_per_worker = 0;  // wall
  double cpu_ms_per_sample = 0;
  double decodes_per_sample = 0;
};

// What every measurement reads: the split, its descriptor and the experiment's settings.
struct Inputs {
  const config::Experiment& ex;
  const LoaderBenchOptions& options;
  data::DatasetInfo info;
  std::vector<data::ImageRecord> records;
  int64_t n = 0;
  int imgsz = 0;
};

// Every image once per repeat, one thread.
Row decode_baseline(const Inputs& in) {
  double wall = 1e300, cpu = 1e300;
  for (int r = 0; r < in.options.repeats; ++r) {
    Stopwatch watch;
    const double cpu_start = process_cpu_ms();
    for (const auto& rec : in.records) data::load_image(rec.file, in.imgsz, false);
    wall = std::min(wall, watch.millis() / static_cast<double>(in.n));
    cpu = std::min(cpu, (process_cpu_ms() - cpu_start) / static_cast<double>(in.n));
  }
  return {"decode + resize only", 1, 1e3 / wall, wall, cpu, 1.0};
}

// One implementation of a stage, timed alone: `prepare` (untimed) then `run` on an image and
// a scratch image.
struct StagePass {
  std::string name;
  std::function<void(const cv::Mat&image, cv::Mat&scratch)> prepare, run;
};

// Each pass on every one of `images` `kRounds` times per repeat: wall and CPU ms per image, best
// of the repeats, one row each labelled "<stage> alone, <imgsz> px: <pass>".
std::vector<Row> time_alone(const Inputs& in, const std::string& stage,
                            const std::vector<data::Sample>& images,
                            const std::vector<StagePass>& passes) {
  constexpr int kRounds = 8;
  std::vector<Row> rows;
  cv::Mat scratch;
  for (const StagePass& pass : passes) {
    double best_wall = 1e300, best_cpu = 1e300;
    for (int r = 0; r < in.options.repeats; ++r) {
      double wall = 0, cpu = 0, calls = 0;
      for (int round = 0; round < kRounds; ++round)
        for (const auto& sample : images) {
          if (sample.image.empty()) continue;  // a batch position the split never filled
          pass.prepare(sample.image, scratch);
          Stopwatch watch;
          const double cpu_start = process_cpu_ms();
          pass.run(sample.image, scratch);
          cpu += process_cpu_ms() - cpu_start;
          wall += watch.millis();
          ++calls;
        }
      if (calls > 0 && wall / calls < best_wall) {
        best_wall = wall / calls;
        best_cpu = cpu / calls;
      }
    }
    if (best_wall < 1e300)
      rows.push_back({fmt::format("  {} alone, {} px: {}", stage, in.imgsz, pass.name), 1,
                      1e3 / best_wall, best_wall, best_cpu, 0.0});
  }
  return rows;
}

// The HSV pass on a copy of each image: the fused kernels this CPU runs, then OpenCV's two
// conversions (the reference's), at the default augment.hsv_* extremes.
std::vector<Row> hsv_alone(const Inputs& in, const std::vector<data::Sample>& images) {
  const data::HsvTables tables = data::hsv_tables({0.015, 0.7, 0.4});
  const auto copy = [](const cv::Mat& image, cv::Mat& scratch) { image.copyTo(scratch); };
  std::vector<StagePass> passes;
  for (const auto kernel : {data::HsvKernel::avx512, data::HsvKernel::avx2})
    if (data::hsv_kernel_available(kernel))
      passes.push_back({fmt::format("fused {}", data::hsv_kernel_name(kernel)), copy,
                        [&tables, kernel](const cv::Mat&, cv::Mat& scratch) {
                          data::apply_hsv_fused(scratch, tables, kernel);
                        }});
  passes.push_back({"OpenCV's conversions", copy, [&tables](const cv::Mat&, cv::Mat& scratch) {
                      data::apply_hsv_with_opencv(scratch, tables);
                    }});
  return time_alone(in, "HSV", images, passes);
}

// A scale-and-translate warp of each image into imgsz x imgsz (scale 0.9, edge replicated, as a
// mosaic tile is warped): warp_scaled with each column pass this CPU runs, then
// cv::warpAffine (the reference's call; it may use OpenCV's threads: compare CPU ms).
std::vector<Row> warp_alone(const Inputs& in, const std::vector<data::Sample>& images) {
  const cv::Matx23d m(0.9, 0, -37.3, 0, 0.9, -11.7);
  const cv::Size size(in.imgsz, in.imgsz);
  const auto allocate = [size](const cv::Mat&, cv::Mat& scratch) { scratch.create(size, CV_8UC3); };
  std::vector<StagePass> passes;
  for (const auto& [columns, name] :
       {std::pair{data::WarpColumns::avx512, "avx512"}, std::pair{data::WarpColumns::avx2, "avx2"},
        std::pair{data::WarpColumns::portable, "portable"}})
    if (data::warp_columns_available(columns))
      passes.push_back({fmt::format("warp_scaled {}", name), allocate,
                        [&m, columns = columns](const cv::Mat& image, cv::Mat& scratch) {
                          data::warp_scaled(image, scratch, m, {true, data::kPadGrey}, columns);
                        }});
  passes.push_back({"cv::warpAffine", allocate, [&m, size](const cv::Mat& image, cv::Mat& scratch) {
                      cv::warpAffine(image, scratch, m, size, cv::INTER_LINEAR,
                                     cv::BORDER_REPLICATE);
                    }});
  return time_alone(in, "affine warp", images, passes);
}

// The transform chain alone on images decoded once into an unbounded cache (freed on return,
// before the RSS check), then the CPU time of each of its stages, and the warp and HSV passes
// alone on the chain's last batch (what the loader hands those stages at imgsz).
std::vector<Row> transform_chain(const Inputs& in) {
  data::ImageCache cache(0);
  data::ImageSource source(in.records, in.info.kpt_count, in.imgsz, false, &cache);
  data::TrainChainOptions chain;
  chain.imgsz = in.imgsz;
  chain.augment = in.ex.augment;
  chain.flip_idx = in.info.flip_idx;
  chain.seed = static_cast<uint64_t>(in.ex.runtime.seed);
  chain.mosaic_window = static_cast<size_t>(std::min<int64_t>({in.n, 8 * in.options.batch, 1000}));
  std::vector<int64_t> order(static_cast<size_t>(in.n));
  for (int64_t i = 0; i < in.n; ++i) order[size_t(i)] = i;
  for (int64_t i = 0; i < in.n; ++i) source.load(i);
  double chain_ms = 1e300, chain_cpu = 0, collate_ms = 0;
  data::ChainTimes stages;
  std::vector<data::Sample> samples(static_cast<size_t>(in.options.batch));
  for (int r = 0; r < in.options.repeats; ++r) {
    data::ChainTimes t;
    Stopwatch watch;
    const double cpu = process_cpu_ms();
    double collate = 0;
    for (size_t p = 0; p < order.size(); ++p) {
      samples[p % samples.size()] =
          data::make_train_sample(source, chain, !in.options.no_mosaic, order, p, r, &t);
      if ((p + 1) % samples.size() != 0) continue;
      const double c = process_cpu_ms();
      data::collate(samples);
      collate += process_cpu_ms() - c;
    }
    const double ms = watch.millis() / static_cast<double>(in.n);
    if (ms < chain_ms) {
      chain_ms = ms;
      chain_cpu = (process_cpu_ms() - cpu) / static_cast<double>(in.n);
      stages = t;
      collate_ms = collate;
    }
  }
  std::vector<Row> rows{{"transforms + collate, cached", 1, 1e3 / chain_ms, chain_ms, chain_cpu}};
  const std::vector<std::pair<std::string, double>> stage_ms = {
      {"mosaic / letterbox placement", stages.place},
      {"affine warp", stages.warp},
      {"HSV", stages.hsv},
      {"flips", stages.flip},
      {"collate", collate_ms}};
  for (const auto& [what, total] : stage_ms)
    rows.push_back({"  cpu: " + what, 1, 0.0, 0.0, total / static_cast<double>(in.n), 0.0});
  for (auto& row : warp_alone(in, samples)) rows.push_back(row);
  for (auto& row : hsv_alone(in, samples)) rows.push_back(row);
  return rows;
}

data::LoaderOptions loader_options(const Inputs& in, int64_t workers) {
  data::LoaderOptions options;
  options.batch = in.options.batch;
  options.prefetch = in.ex.data.prefetch;
  options.seed = static_cast<uint64_t>(in.ex.runtime.seed);
  options.imgsz = in.imgsz;
  options.train = true;
  options.workers = workers;
  return options;
}

// The full chain through the loader with `workers` workers, a fresh loader per repeat.
Row full_loader(const Inputs& in, int64_t workers) {
  double best_s = 1e300, best_cpu = 0, decodes = 0;
  for (int r = 0; r < in.options.repeats; ++r) {
    data::Loader loader(in.info, in.records, in.ex.augment, loader_options(in, workers));
    loader.set_mosaic(!in.options.no_mosaic);
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
  const double n = static_cast<double>(in.n);
  return {kLoaderStage, workers,
          n / best_s,   1e3 * best_s * static_cast<double>(std::max<int64_t>(workers, 1)) / n,
          best_cpu,     decodes};
}

// RSS over repeated epochs of one long-lived loader, after returning freed heap pages so
// earlier stages do not blur the trend.
std::vector<double> rss_per_epoch(const Inputs& in, int64_t workers) {
  malloc_trim(0);
  std::vector<double> rss;
  data::Loader loader(in.info, in.records, in.ex.augment, loader_options(in, workers));
  loader.set_mosaic(!in.options.no_mosaic);
  for (int e = 0; e < in.options.epochs; ++e) {
    loader.start_epoch(e);
    while (loader.next()) {
    }
    rss.push_back(static_cast<double>(resident_memory_bytes()));
  }
  return rss;
}

// Waits until `count` files `<dir>/<prefix><r>` exist (every rank reached that point).
void wait_for_all(const std::string& dir, const std::string& prefix, int64_t count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(30);
  for (int64_t r = 0; r < count; ++r) {
    while (!std::filesystem::exists(dir + "/" + prefix + std::to_string(r))) {
      if (std::chrono::steady_clock::now() > deadline)
        throw DistributedError("bench loader: rank " + std::to_string(r) + " of " +
                               std::to_string(count) + " never reached '" + prefix + "'");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

// One rank of the memory check: its shard for `epochs` epochs, then RSS and PSS once every rank
// has finished (so shared pages are split among all of them), then exit together.
void run_as_rank(const Inputs& in, int64_t rank) {
  const auto& o = in.options;
  data::LoaderOptions lo =
      loader_options(in, *std::max_element(o.workers.begin(), o.workers.end()));
  lo.cache = in.ex.data.cache;
  lo.world_size = o.ranks;
  lo.rank = rank;
  data::Loader loader(in.info, in.records, in.ex.augment, lo);
  loader.set_mosaic(!o.no_mosaic);
  for (int e = 0; e < o.epochs; ++e) {
    loader.start_epoch(e);
    while (loader.next()) {
    }
  }
  const std::string r = std::to_string(rank);
  write_file_atomic(o.rank_dir + "/trained-" + r, "");
  wait_for_all(o.rank_dir, "trained-", o.ranks);
  const nlohmann::json report = {{"rss", resident_memory_bytes()},
                                 {"pss", proportional_memory_bytes()},
                                 {"cached_images", loader.stats().cached_images},
                                 {"cached_bytes", loader.stats().cached_bytes}};
  write_file_atomic(o.rank_dir + "/report-" + r, report.dump());
  wait_for_all(o.rank_dir, "report-", o.ranks);
}

struct RankMemory {
  double rss = 0, pss = 0, cached_bytes = 0;
};

// `ranks` rank processes side by side; their reports in rank order.
std::vector<RankMemory> spawn_ranks(const LoaderBenchOptions& o, int64_t ranks) {
  ScratchDir dir("detrain-bench-ranks-");
  std::vector<std::string> argv = {
      "/proc/self/exe", "--quiet",
      "bench",          "loader",
      "--split",        o.split,
      "--imgsz",        std::to_string(o.imgsz),
      "--batch",        std::to_string(o.batch),
      "--epochs",       std::to_string(o.epochs),
      "--workers",      std::to_string(*std::max_element(o.workers.begin(), o.workers.end())),
      "--ranks",        std::to_string(ranks),
      "--rank-dir",     dir.path()};
  if (!o.data.empty()) argv.insert(argv.end(), {"--data", o.data});
  if (o.no_mosaic) argv.push_back("--no-mosaic");
  if (!o.config_file.empty()) argv.insert(argv.end(), {"--config", o.config_file});
  std::vector<int> pids;
  for (int64_t r = 0; r < ranks; ++r) {
    std::vector<std::string> rank_argv = argv;
    rank_argv.insert(rank_argv.end(), {"--as-rank", std::to_string(r)});
    rank_argv.insert(rank_argv.end(), o.overrides.begin(), o.overrides.end());
    pids.push_back(
        start_program("/proc/self/exe", rank_argv, dir.file("rank-" + std::to_string(r) + ".log")));
  }
  std::vector<RankMemory> out;
  bool failed = false;
  for (size_t r = 0; r < pids.size(); ++r)
    failed |= wait_program(pids[r], "bench loader rank " + std::to_string(r)) != 0;
  if (failed) {
    dir.keep();
    throw DistributedError("bench loader: a rank process failed; its output is in " + dir.path());
  }
  for (int64_t r = 0; r < ranks; ++r) {
    const auto j = nlohmann::json::parse(read_file(dir.file("report-" + std::to_string(r))));
    out.push_back(
        {j.at("rss").get<double>(), j.at("pss").get<double>(), j.at("cached_bytes").get<double>()});
  }
  return out;
}

Report make_report(const Inputs& in, const compat::RuntimeInfo& runtime,
                   const std::vector<Row>& rows, int64_t rss_workers,
                   const std::vector<double>& rss, const std::vector<RankMemory>& alone,
                   const std::vector<RankMemory>& side_by_side) {
  const auto& o = in.options;
  const std::string mode = o.no_mosaic ? "letterbox (mosaic off)" : "mosaic";
  Report report;
  report.title = fmt::format(
      "{} ({}, {} images) at {} px, batch {}, {}, {} cores; best of {} repeats", in.info.yaml_path,
      o.split, in.n, o.imgsz, o.batch, mode, runtime.cores, o.repeats);
  report.head = {{"data", in.info.yaml_path}, {"split", o.split}, {"images", in.n},
                 {"imgsz", o.imgsz},          {"batch", o.batch}, {"mode", mode},
                 {"cores", runtime.cores}};
  if (o.reference_ms) report.head["reference_ms_per_sample"] = *o.reference_ms;
  report.rows_key = "rows";
  report.columns = {{"stage", "stage"},
                    {"workers", "workers"},
                    {"samples/s", "samples_per_s"},
                    {"wall ms/s/w", "ms_per_sample_per_worker"},
                    {"cpu ms/samp", "cpu_ms_per_sample"},
                    {"decodes", "decodes_per_sample"}};
  for (const auto& r : rows)
    report.rows.push_back({label(r.stage), integer(r.workers), number_or_dash(r.samples_per_s, 1),
                           number_or_dash(r.ms_per_sample_per_worker, 2),
                           number_or_dash(r.cpu_ms_per_sample, 2),
                           number(r.decodes_per_sample, 2)});
  report.tail = {{"rss_bytes_per_epoch", rss}};
  if (o.reference_ms) {
    // The loader's cheapest CPU cost per sample against the reference's one process.
    const Row* best = nullptr;
    for (const auto& r : rows)
      if (r.stage == kLoaderStage && (!best || r.cpu_ms_per_sample < best->cpu_ms_per_sample))
        best = &r;
    if (best)
      report.notes.push_back(fmt::format(
          "reference (--reference-ms): {:.2f} ms/sample; full chain + collate here: {:.2f} cpu "
          "ms/sample at {} worker(s); reference / this run = {:.2f}",
          *o.reference_ms, best->cpu_ms_per_sample, best->workers,
          *o.reference_ms / best->cpu_ms_per_sample));
  }
  std::vector<std::string> sizes;
  for (const double b : rss) sizes.push_back(human_bytes(b));
  report.notes.push_back(fmt::format("RSS after each of {} epochs ({} workers): {}", rss.size(),
                                     rss_workers, join(sizes, ", ")));
  if (!side_by_side.empty()) {
    const auto line = [](const RankMemory& m) {
      return fmt::format("RSS {}, PSS {}", human_bytes(m.rss), human_bytes(m.pss));
    };
    report.notes.push_back(fmt::format(
        "memory per rank (data.cache={}, {} epochs; PSS splits each shared page between its "
        "users):",
        in.ex.data.cache, in.options.epochs));
    report.notes.push_back(fmt::format("  one process alone: {} (decoded images held: {})",
                                       line(alone[0]), human_bytes(alone[0].cached_bytes)));
    double rss_sum = 0, pss_sum = 0;
    for (size_t r = 0; r < side_by_side.size(); ++r) {
      rss_sum += side_by_side[r].rss;
      pss_sum += side_by_side[r].pss;
      report.notes.push_back(
          fmt::format("  rank {} of {}: {}", r, side_by_side.size(), line(side_by_side[r])));
    }
    report.notes.push_back(fmt::format(
        "  {} ranks together: RSS {}, PSS {} = {:.2f}x one process", side_by_side.size(),
        human_bytes(rss_sum), human_bytes(pss_sum), pss_sum / std::max(alone[0].pss, 1.0)));
    nlohmann::json per_rank = nlohmann::json::array();
    for (const auto& m : side_by_side) per_rank.push_back({{"rss", m.rss}, {"pss", m.pss}});
    report.tail["ranks"] = {{"alone", {{"rss", alone[0].rss}, {"pss", alone[0].pss}}},
                            {"side_by_side", per_rank}};
  }
  return report;
}

}  // namespace

Report bench_loader(const config::ResolvedConfig& resolved, const LoaderBenchOptions& options) {
  const auto& ex = resolved.experiment;
  const auto runtime = compat::apply_runtime(ex.runtime);
  Inputs in{ex, options, data::load_dataset(options.data.empty() ? ex.data.dataset : options.data),
            {}, 0,       0};
  data::RecordOptions record_options;
  record_options.skip_missing = ex.data.skip_missing;
  in.records = data::load_records(in.info, options.split, record_options).images;
  in.n = static_cast<int64_t>(in.records.size());
  in.imgsz = static_cast<int>(options.imgsz);
  if (options.as_rank) {  // a rank process of the memory check: nothing else
    run_as_rank(in, *options.as_rank);
    return {};
  }

  std::vector<Row> rows{decode_baseline(in)};
  for (auto& row : transform_chain(in)) rows.push_back(row);
  for (const int64_t w : options.workers) rows.push_back(full_loader(in, w));
  const int64_t rss_workers = *std::max_element(options.workers.begin(), options.workers.end());
  const std::vector<double> rss = rss_per_epoch(in, rss_workers);
  std::vector<RankMemory> alone, side_by_side;
  if (options.ranks > 1) {
    alone = spawn_ranks(options, 1);
    side_by_side = spawn_ranks(options, options.ranks);
  }
  return make_report(in, runtime, rows, rss_workers, rss, alone, side_by_side);
}

}  // namespace detrain::bench
