// `detrain predict`: a checkpoint or safetensors weights on an image or a directory; writes the
// images with detections drawn, predictions.json and images.json to --out (never over a file
// that is there: predictions_2.json, ...), and says where.
#include <iostream>

#include "command_table.h"
#include "commands.h"
#include "common/errors.h"
#include "compat/runtime.h"
#include "data/dataset.h"
#include "tasks/inference_model.h"
#include "tasks/predict.h"

namespace detrain::cli {

namespace {

struct PredictArgs {
  ConfigArgs config;
  std::string weights, source, out, data, model;
  double conf = -1;     // < 0: val.predict_conf
  int64_t imgsz = 0;    // 0: data.imgsz
  int64_t max_det = 0;  // 0: val.max_det
  bool no_draw = false;
  tasks::PredictOptions options;
};

int run_predict(const PredictArgs& args) {
  std::vector<std::string> overrides = args.config.user_overrides();
  const std::string weights = args.config.take_weights(overrides, args.weights);
  if (!args.model.empty()) overrides.push_back("model.arch=" + args.model);
  if (!args.data.empty()) overrides.push_back("data.dataset=" + args.data);
  // The Ultralytics flags are config keys underneath (shown in the config as overrides).
  if (args.conf >= 0) overrides.push_back("val.predict_conf=" + std::to_string(args.conf));
  if (args.imgsz > 0) overrides.push_back("data.imgsz=" + std::to_string(args.imgsz));
  if (args.max_det > 0) overrides.push_back("val.max_det=" + std::to_string(args.max_det));
  tasks::PredictOptions options = args.options;
  options.draw = !args.no_draw;
  const config::ResolvedConfig given = config::resolve(args.config.config_file, {});
  tasks::InferenceModel m = tasks::load_inference_model(weights, given, overrides);
  const config::Experiment& x = m.config.experiment;
  compat::apply_runtime(x.runtime);
  // Class names from the data set when its descriptor is at hand (an Ultralytics .pt names its
  // own classes unless -d names a data set).
  std::optional<data::DatasetInfo> dataset;
  if (!m.names.empty() && args.data.empty()) {
    dataset.emplace();
    dataset->names = m.names;
    for (size_t c = 0; c < m.names.size(); ++c)
      dataset->coco_ids.push_back(static_cast<int64_t>(c));
  } else {
    try {
      dataset = data::load_dataset(x.data.dataset, x.data.root);
      tasks::use_file_class_names(m, *dataset);
    } catch (const Error&) {
      std::cerr << "detrain: note: " << x.data.dataset
                << " is not readable here; classes are shown as indices\n";
    }
  }
  const tasks::PredictSummary s = tasks::predict_images(*m.model, x, dataset ? &*dataset : nullptr,
                                                        args.source, args.out, options);
  std::cout << s.detections << " detections on " << s.images << " images";
  if (s.unreadable) std::cout << " (" << s.unreadable << " unreadable files skipped)";
  std::string files = options.draw ? "drawn images" : "";
  if (options.save_txt) files += files.empty() ? "labels/*.txt" : " and labels/*.txt";
  if (!files.empty()) std::cout << "; " << files << " in " << s.out_dir;
  std::cout << "; COCO results " << s.predictions_json << " (image list " << s.images_json << ")\n";
  return 0;
}

}  // namespace

Command add_predict_command(CLI::App& root) {
  auto* app = root.add_subcommand("predict", command_description("predict"));
  auto args = std::make_shared<PredictArgs>();
  args->config.add_to(app);
  app->add_option("--weights,-w", args->weights,
                  "Ultralytics .pt, checkpoint (.ckpt) or safetensors weights (or model=FILE)");
  app->add_option("--source,-s", args->source,
                  "an image file, a directory of images or a pattern (\"dir/*.jpg\"); videos: "
                  "extract their frames first")
      ->required();
  app->add_option("--out,-o", args->out, "output directory")->required();
  app->add_option("--data,-d", args->data, "data-set descriptor for class names");
  app->add_option(
      "--model,-m", args->model,
      "architecture of a safetensors state dict, e.g. yolo26n (model.arch); checkpoints and .pt "
      "files name their own");
  app->add_option("--conf", args->conf, "confidence threshold (default val.predict_conf)")
      ->check(CLI::Range(0.0, 1.0));
  app->add_option("--imgsz", args->imgsz, "inference size, a multiple of 32 (default data.imgsz)")
      ->check(CLI::Range(int64_t{32}, int64_t{8192}));
  app->add_option("--max-det", args->max_det, "detections kept per image (default val.max_det)")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  app->add_flag("--recursive,-r", args->options.recursive, "read the sub-folders of --source too");
  app->add_flag("--save-txt", args->options.save_txt,
                "write labels/<name>.txt per image (YOLO format: class cx cy w h, normalised)");
  app->add_flag("--no-draw", args->no_draw, "do not write the drawn images");
  return {app, [args]() { return run_predict(*args); }};
}

}  // namespace detrain::cli
