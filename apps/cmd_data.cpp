// `detrain data preview|stats`: look at a data set before training. preview writes a grid of
// loader batches (augmented for train, letterboxed rect batches for val) with boxes, class
// names and skeletons; stats prints per-class counts, box sizes, backgrounds and problems.
#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <opencv2/imgcodecs.hpp>

#include "command_table.h"
#include "commands.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "compat/runtime.h"
#include "data/coco_records.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "data/preview.h"
#include "report/batch_plots.h"

namespace detrain::cli {

namespace {

struct DataArgs {
  ConfigArgs config;
  std::string data;
  std::string split = "train";
  int64_t n = 16;
  int64_t epoch = 0;
  std::string out = "preview.jpg";
  bool check_images = false;
};

data::DatasetInfo dataset_of(const DataArgs& args, const config::DataOptions& data) {
  return data::load_dataset(args.data.empty() ? data.dataset : args.data, data.root);
}

int run_preview(const DataArgs& args) {
  const auto resolved = args.config.resolve();
  const auto& ex = resolved.experiment;
  compat::apply_runtime(ex.runtime);
  const data::DatasetInfo info = dataset_of(args, ex.data);
  const bool train = args.split == "train";
  auto records = data::load_records(info, args.split, data::RecordOptions::from(ex.data, train));
  data::LoaderOptions options =
      data::LoaderOptions::from(ex.data, static_cast<uint64_t>(ex.runtime.seed), train);
  options.batch = args.n;
  options.pin_memory = false;
  data::Loader loader(info, std::move(records.images), ex.augment, options);
  loader.start_epoch(args.epoch);
  const auto batch = loader.next();
  if (!batch) throw DataError(info.yaml_path + ": the " + args.split + " split has no images");
  const cv::Mat grid = report::draw_batch_targets(*batch, info);
  const auto parent = std::filesystem::path(args.out).parent_path();
  if (!parent.empty()) ensure_writable_dir(parent.string());
  std::vector<uint8_t> jpeg;
  cv::imencode(".jpg", grid, jpeg, {cv::IMWRITE_JPEG_QUALITY, 90});
  write_file_atomic(args.out, std::string(jpeg.begin(), jpeg.end()));
  spdlog::info("wrote {} ({} {} samples, {}x{} px each, {} targets)", args.out, batch->size(),
               args.split, batch->images.size(3), batch->images.size(2), batch->cls.size(0));
  return 0;
}

int run_stats(const DataArgs& args) {
  const auto resolved = args.config.resolve();
  const auto& ex = resolved.experiment;
  const data::DatasetInfo info = dataset_of(args, ex.data);
  std::vector<std::string> splits = args.split == "both" ? std::vector<std::string>{"train", "val"}
                                                         : std::vector<std::string>{args.split};
  for (const auto& split : splits) {
    data::RecordOptions options = data::RecordOptions::from(ex.data, split == "train");
    options.skip_missing = true;  // stats reports missing files instead of stopping
    const data::Records records = data::load_records(info, split, options);
    std::cout << data::format_stats(data::compute_stats(records, info, args.check_images), info,
                                    split);
  }
  return 0;
}

}  // namespace

Command add_data_command(CLI::App& root) {
  auto* app = root.add_subcommand("data", command_description("data"));
  app->require_subcommand(1);
  auto args = std::make_shared<DataArgs>();

  auto* preview = app->add_subcommand("preview", "write a grid of loader samples with labels");
  args->config.add_to(preview);
  preview->add_option("--data,-d", args->data, "data-set descriptor (default data.dataset)");
  preview->add_option("--split", args->split, "train (augmented) or val (letterboxed)")
      ->check(CLI::IsMember({"train", "val"}));
  preview->add_option("--n,-n", args->n, "samples in the grid (default 16)")
      ->check(CLI::Range(1, 256));
  preview->add_option("--epoch", args->epoch, "epoch whose shuffle and augmentation to show")
      ->check(CLI::Range(0, 1000000));
  preview->add_option("--out,-o", args->out, "output JPEG (default preview.jpg)");

  auto* stats = app->add_subcommand("stats", "counts per class, box sizes, problems found");
  args->config.add_to(stats);
  stats->add_option("--data,-d", args->data, "data-set descriptor (default data.dataset)");
  stats->add_option("--split", args->split, "train, val or both (default train)")
      ->check(CLI::IsMember({"train", "val", "both"}));
  stats->add_flag("--check-images", args->check_images, "decode every image to find corrupt ones");

  const Command synth = add_data_synth(*app);

  return {app, [args, preview, stats, synth]() {
            if (preview->parsed()) return run_preview(*args);
            if (stats->parsed()) return run_stats(*args);
            if (synth.app->parsed()) return synth.run();
            return 2;
          }};
}

}  // namespace detrain::cli
