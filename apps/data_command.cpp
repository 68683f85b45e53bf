// `detrain data` shared by both executables; see data_command.h.
#include "data_command.h"

#include <iostream>
#include <stdexcept>
#include <vector>

#include "command_table.h"
#include "data/coco_records.h"
#include "data/dataset.h"

namespace detrain::cli {

CLI::App* add_data_app(CLI::App& root) {
  auto* app = root.add_subcommand("data", command_description("data"));
  app->require_subcommand(1);
  return app;
}

const char* data_kind_description(const std::string& kind) {
  if (kind == "preview") return "write a grid of loader samples with labels";
  if (kind == "stats") return "counts per class, box sizes, problems found";
  if (kind == "synth")
    return "write the synthetic shapes data set (COCO format, detect + pose descriptors)";
  throw std::logic_error("`data " + kind + "` has no description in apps/data_command.cpp");
}

CLI::App* add_data_stats(CLI::App& data, DataStatsArgs& args) {
  auto* stats = data.add_subcommand("stats", data_kind_description("stats"));
  args.config.add_to(stats);
  stats->add_option("--data,-d", args.data, "data-set descriptor (default data.dataset)");
  stats->add_option("--split", args.split, "train, val or both (default train)")
      ->check(CLI::IsMember({"train", "val", "both"}));
  stats->add_flag("--check-images", args.check_images, "decode every image to find corrupt ones");
  return stats;
}

int run_data_stats(const DataStatsArgs& args, const data::ImageCheck& decodes) {
  if (args.check_images && !decodes)
    throw std::logic_error("data stats --check-images needs an image decoder");
  const auto resolved = args.config.resolve();
  const auto& ex = resolved.experiment;
  const data::DatasetInfo info =
      data::load_dataset(args.data.empty() ? ex.data.dataset : args.data, ex.data.root);
  const std::vector<std::string> splits = args.split == "both"
                                              ? std::vector<std::string>{"train", "val"}
                                              : std::vector<std::string>{args.split};
  std::string report;
  for (const auto& split : splits) {
    data::RecordOptions options = data::RecordOptions::from(ex.data, split == "train");
    options.skip_missing = true;  // stats reports missing files instead of stopping
    const data::Records records = data::load_records(info, split, options);
    report += data::format_stats(
        data::compute_stats(records, info, args.check_images ? decodes : data::ImageCheck{}), info,
        split);
  }
  std::cout << report;
  return 0;
}

}  // namespace detrain::cli
