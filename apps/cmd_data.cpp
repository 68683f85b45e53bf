// `detrain data preview|stats`: look at a data set before training. preview writes a grid of
// loader batches (augmented for train, letterboxed rect batches for val) with boxes, class
// names and skeletons; stats prints per-class counts, box sizes, backgrounds and problems.
#include <spdlog/spdlog.h>

#include <filesystem>
#include <memory>
#include <opencv2/imgcodecs.hpp>

#include "commands.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "compat/runtime.h"
#include "data/coco_records.h"
#include "data/dataset.h"
#include "data/decode.h"
#include "data/loader.h"
#include "data_command.h"
#include "report/batch_plots.h"

namespace detrain::cli {

namespace {

struct PreviewArgs {
  ConfigArgs config;
  std::string data;
  std::string split = "train";
  int64_t n = 16;
  int64_t epoch = 0;
  std::string out = "preview.jpg";
};

int run_preview(const PreviewArgs& args) {
  const auto resolved = args.config.resolve();
  const auto& ex = resolved.experiment;
  compat::apply_runtime(ex.runtime);
  const data::DatasetInfo info =
      data::load_dataset(args.data.empty() ? ex.data.dataset : args.data, ex.data.root);
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

// --check-images in detrain-torch: the loader's decoder.
bool image_decodes(const std::string& path) { return data::load_image(path, 0, false).ok(); }

}  // namespace

Command add_data_command(CLI::App& root) {
  auto* app = add_data_app(root);
  auto args = std::make_shared<PreviewArgs>();
  auto stats_args = std::make_shared<DataStatsArgs>();

  auto* preview = app->add_subcommand("preview", data_kind_description("preview"));
  args->config.add_to(preview);
  preview->add_option("--data,-d", args->data, "data-set descriptor (default data.dataset)");
  preview->add_option("--split", args->split, "train (augmented) or val (letterboxed)")
      ->check(CLI::IsMember({"train", "val"}));
  preview->add_option("--n,-n", args->n, "samples in the grid (default 16)")
      ->check(CLI::Range(1, 256));
  preview->add_option("--epoch", args->epoch, "epoch whose shuffle and augmentation to show")
      ->check(CLI::Range(0, 1000000));
  preview->add_option("--out,-o", args->out, "output JPEG (default preview.jpg)");

  auto* stats = add_data_stats(*app, *stats_args);

  const Command synth = add_data_synth(*app);

  return {app, [args, stats_args, preview, stats, synth]() {
            if (preview->parsed()) return run_preview(*args);
            if (stats->parsed()) return run_data_stats(*stats_args, image_decodes);
            if (synth.app->parsed()) return synth.run();
            return 2;
          }};
}

}  // namespace detrain::cli
