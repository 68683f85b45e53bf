// `detrain predict`: a checkpoint or safetensors weights on an image or a directory; writes the
// images with detections drawn, predictions.json and images.json to --out.
#include <iostream>

#include "commands.h"
#include "common/errors.h"
#include "common/runtime.h"
#include "data/dataset.h"
#include "train/inference_model.h"
#include "train/predict.h"

namespace detrain::cli {

namespace {

struct PredictArgs {
  ConfigArgs config;
  std::string weights, source, out, data;
};

int run_predict(const PredictArgs& args) {
  std::vector<std::string> overrides = args.config.overrides;
  if (!args.data.empty()) overrides.push_back("data.dataset=" + args.data);
  const config::ResolvedConfig given = config::resolve(args.config.config_file, {});
  train::InferenceModel m = train::load_inference_model(args.weights, given, overrides);
  const config::Experiment& x = m.config.experiment;
  apply_runtime(x.runtime);
  // Class names from the data set when its descriptor is at hand.
  std::optional<data::DatasetInfo> dataset;
  try {
    dataset = data::load_dataset(x.data.dataset, x.data.root);
  } catch (const Error&) {
    std::cerr << "detrain: note: " << x.data.dataset
              << " is not readable here; classes are shown as indices\n";
  }
  const train::PredictSummary s =
      train::predict_images(*m.model, x, dataset ? &*dataset : nullptr, args.source, args.out);
  std::cout << s.detections << " detections on " << s.images << " images";
  if (s.unreadable) std::cout << " (" << s.unreadable << " unreadable files skipped)";
  std::cout << "; drawn images, predictions.json and images.json in " << s.out_dir << "\n";
  return 0;
}

}  // namespace

Command add_predict_command(CLI::App& root) {
  auto* app = root.add_subcommand("predict", "detect objects (and keypoints) in images");
  auto args = std::make_shared<PredictArgs>();
  args->config.add_to(app);
  app->add_option("--weights,-w", args->weights, "checkpoint (.ckpt) or safetensors weights")
      ->required();
  app->add_option("--source,-s", args->source, "an image file or a directory of images")
      ->required();
  app->add_option("--out,-o", args->out, "output directory")->required();
  app->add_option("--data,-d", args->data, "data-set descriptor for class names");
  return {app, [args]() { return run_predict(*args); }};
}

}  // namespace detrain::cli
