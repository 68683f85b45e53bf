// `detrain predict`: a checkpoint or safetensors weights on an image or a directory; writes the
// images with detections drawn, predictions.json and images.json to --out, or to a new
// runs/predict, predict2, ... as `yolo predict` does (never over a file that is there:
// predictions_2.json, ...), and says where. Takes yolo predict's arguments too (source=,
// save_txt=True, conf=0.5; config/ultralytics_args.h).
#include <algorithm>
#include <iostream>

#include "command_table.h"
#include "commands.h"
#include "common/errors.h"
#include "compat/runtime.h"
#include "data/dataset.h"
#include "report/numbered_dir.h"
#include "tasks/inference_model.h"
#include "tasks/predict.h"
#include "tasks/predict_sources.h"

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

// One setting given as an option of predict (`option_value`, "" when not given; "true" or
// "false" for a flag) and/or as its Ultralytics argument `name` (source=photos, save=False):
// either one, or both when they agree.
std::string option_or_argument(const std::string& option_value, const std::string& option,
                               const config::TranslatedArgs& t, const std::string& name) {
  const auto it = t.own.find(name);
  if (it == t.own.end()) return option_value;
  if (!option_value.empty() && option_value != it->second) {
    const bool flag = option_value == "true" || option_value == "false";
    throw Error(ExitCode::kUsage, "detrain predict: " + option + (flag ? "" : " " + option_value) +
                                      " and " + name + "=" + it->second +
                                      " disagree; give one of them");
  }
  return it->second;
}

// Where the results go: -o OUT as given, else a new <project>/predict (predict2, ... unless
// exist_ok), Ultralytics' numbering. Checked before the model loads; made only when the images
// are there.
class OutputDir {
 public:
  OutputDir(const PredictArgs& args, const config::TranslatedArgs& t,
            const std::vector<std::string>& overrides)
      : out_(args.out), project_(args.config.project(overrides)) {
    const auto name = t.own.find("name");
    const auto exist_ok = t.own.find("exist_ok");
    const bool project_given =
        std::any_of(overrides.begin(), overrides.end(),
                    [](const std::string& o) { return o.rfind("train.project=", 0) == 0; });
    if (!out_.empty() && (name != t.own.end() || exist_ok != t.own.end() || project_given))
      throw Error(ExitCode::kUsage,
                  "detrain predict: -o " + out_ +
                      " names the folder; project=, name= and exist_ok= choose a numbered one "
                      "(runs/predict, predict2, ...): give one or the other");
    if (name != t.own.end()) name_ = name->second;
    exist_ok_ = exist_ok != t.own.end() && exist_ok->second == "true";
  }
  std::string create() const {
    return out_.empty() ? report::create_numbered_dir(project_, name_, exist_ok_) : out_;
  }

 private:
  std::string out_, project_, name_ = "predict";
  bool exist_ok_ = false;
};

int run_predict(const PredictArgs& args) {
  const config::TranslatedArgs translated = args.config.translated();
  std::vector<std::string> overrides = translated.overrides;
  const std::string source = option_or_argument(args.source, "-s", translated, "source");
  if (source.empty())
    throw Error(ExitCode::kUsage,
                "detrain predict: give the images, as -s/--source SOURCE or source=SOURCE (an "
                "image, a folder or a quoted pattern \"photos/*.jpg\"; see detrain predict "
                "--help)");
  const std::string weights = args.config.take_weights(overrides, args.weights);
  const OutputDir out_dir(args, translated, overrides);
  if (!args.model.empty()) overrides.push_back("model.arch=" + args.model);
  if (!args.data.empty()) overrides.push_back("data.dataset=" + args.data);
  // The Ultralytics flags are config keys underneath (shown in the config as overrides).
  if (args.conf >= 0) overrides.push_back("val.predict_conf=" + std::to_string(args.conf));
  if (args.imgsz > 0) overrides.push_back("data.imgsz=" + std::to_string(args.imgsz));
  if (args.max_det > 0) overrides.push_back("val.max_det=" + std::to_string(args.max_det));
  tasks::PredictOptions options = args.options;
  options.draw =
      option_or_argument(args.no_draw ? "false" : "", "--no-draw", translated, "save") != "false";
  options.save_txt = option_or_argument(args.options.save_txt ? "true" : "", "--save-txt",
                                        translated, "save_txt") == "true";
  const config::ResolvedConfig given = config::resolve(args.config.config_file, {});
  tasks::InferenceModel m = tasks::load_inference_model(weights, given, overrides);
  const config::Experiment& x = m.config.experiment;
  compat::apply_runtime(x.runtime);
  // Class names from the data set when its descriptor is at hand (an Ultralytics .pt names its
  // own classes unless -d names a data set).
  std::optional<data::DatasetInfo> dataset;
  const bool data_given = std::any_of(overrides.begin(), overrides.end(), [](const std::string& o) {
    return o.rfind("data.dataset=", 0) == 0;
  });
  if (!m.names.empty() && !data_given) {
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
  // A missing source fails here, before a numbered folder is made for nothing.
  tasks::source_images(source, options.recursive);
  const std::string out = out_dir.create();
  const tasks::PredictSummary s =
      tasks::predict_images(*m.model, x, dataset ? &*dataset : nullptr, source, out, options);
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
                  "extract their frames first (or source=)");
  app->add_option("--out,-o", args->out,
                  "output directory (default: a new runs/predict, predict2, ...; project=, "
                  "name=, exist_ok=True choose another)");
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
                "write labels/<name>.txt per image (YOLO format: class cx cy w h, normalised; or "
                "save_txt=True)");
  app->add_flag("--no-draw", args->no_draw, "do not write the drawn images (or save=False)");
  return {app, [args]() { return run_predict(*args); }};
}

}  // namespace detrain::cli
