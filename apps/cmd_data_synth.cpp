// `detrain data synth`: writes the generated shapes data set (src/data/synth.h) in COCO format
// with its two descriptors, so the demo and offline users have real files to train on.
#include <iostream>

#include "commands.h"
#include "data/synth.h"
#include "data_command.h"

namespace detrain::cli {

Command add_data_synth(CLI::App& data) {
  auto* app = data.add_subcommand("synth", data_kind_description("synth"));
  auto out = std::make_shared<std::string>();
  auto options = std::make_shared<data::SynthOptions>();
  app->add_option("--out,-o", *out, "output directory (created)")->required();
  app->add_option("--seed", options->seed, "generator seed (same seed: identical files)");
  app->add_option("--train-images", options->train_images, "training images")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  app->add_option("--val-images", options->val_images, "validation images")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  app->add_option("--min-side", options->min_side, "smallest image side in pixels")
      ->check(CLI::Range(32, 4096));
  app->add_option("--max-side", options->max_side, "largest image side in pixels")
      ->check(CLI::Range(32, 4096));
  app->add_option("--max-objects", options->max_objects, "objects per image at most")
      ->check(CLI::Range(1, 100));
  app->add_option("--threads", options->threads, "writer threads (0: every core)");
  return {app, [out, options]() {
            const data::SynthSummary s = data::write_synth_dataset(*out, *options);
            std::cout << "wrote " << s.images << " images with " << s.instances << " objects ("
                      << s.persons << " persons with keypoints) to " << s.root << "\n"
                      << "  detect: " << s.detect_yaml << "\n"
                      << "  pose:   " << s.pose_yaml << "\n";
            return 0;
          }};
}

}  // namespace detrain::cli
