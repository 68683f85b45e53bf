// `detrain export`: a checkpoint or safetensors weights as an ONNX file (the fused inference
// model, see src/export/onnx_export.h) or as safetensors with the reference's names.
#include <filesystem>
#include <iostream>

#include "command_table.h"
#include "commands.h"
#include "common/errors.h"
#include "data/dataset.h"
#include "export/onnx_export.h"
#include "export/weights_export.h"
#include "tasks/inference_model.h"

namespace detrain::cli {

namespace {

namespace fs = std::filesystem;

struct ExportArgs {
  ConfigArgs config;
  std::string weights, format = "onnx", out, model;
  int64_t imgsz = 0, batch = 1, opset = exporter::kMinOpset;
  bool dynamic = false, half = false;
};

std::string output_path(const ExportArgs& args, const std::string& weights) {
  if (!args.out.empty()) return args.out;
  const std::string out = fs::path(weights).replace_extension("." + args.format).string();
  if (out == weights)
    throw Error(ExitCode::kUsage, "the default output " + out +
                                      " is the input file; pass -o FILE for the exported copy");
  return out;
}

// Class names from the model's data set when its descriptor is readable here, else none.
std::vector<std::string> class_names(const config::Experiment& x) {
  try {
    return data::load_dataset(x.data.dataset, x.data.root).names;
  } catch (const Error&) {
    std::cerr << "detrain: note: " << x.data.dataset
              << " is not readable here; the file's metadata names classes by index\n";
    return {};
  }
}

int run_export(const ExportArgs& args) {
  if (args.format != "onnx" && args.format != "safetensors")
    throw Error(ExitCode::kUsage,
                "--format " + args.format + " is not supported; use onnx or safetensors");
  if (args.format == "safetensors" && args.half)
    throw Error(ExitCode::kUsage, "--half applies to --format onnx only");
  std::vector<std::string> overrides = args.config.user_overrides();
  const std::string weights = args.config.take_weights(overrides, args.weights);
  if (!args.model.empty()) overrides.push_back("model.arch=" + args.model);
  const std::string out = output_path(args, weights);
  const config::ResolvedConfig given = config::resolve(args.config.config_file, {});
  tasks::InferenceModel m = tasks::load_inference_model(weights, given, overrides);
  if (args.format == "safetensors") {
    exporter::export_safetensors(*m.model, out);
    std::cout << "wrote " << out << " (" << m.model->arch().name()
              << " weights, reference names)\n";
    return 0;
  }
  const config::Experiment& x = m.config.experiment;
  exporter::OnnxOptions o;
  o.imgsz = args.imgsz > 0 ? args.imgsz : x.data.imgsz;
  o.batch = args.batch;
  o.dynamic = args.dynamic;
  o.half = args.half;
  o.opset = args.opset;
  o.max_det = x.val.max_det;
  exporter::check_onnx_options(*m.model, o);
  o.names = m.names.empty() ? class_names(x) : m.names;
  exporter::export_onnx(*m.model, o, out);
  std::cout << "wrote " << out << " (" << m.model->arch().name() << ", " << o.imgsz << "x"
            << o.imgsz << ", batch " << (o.dynamic ? "dynamic" : std::to_string(o.batch))
            << ", opset " << o.opset << (o.half ? ", float16" : "") << ")\n";
  return 0;
}

}  // namespace

Command add_export_command(CLI::App& root) {
  auto* app = root.add_subcommand("export", command_description("export"));
  auto args = std::make_shared<ExportArgs>();
  args->config.add_to(app);
  app->add_option("--weights,-w", args->weights,
                  "Ultralytics .pt, checkpoint (.ckpt) or safetensors weights (architecture from "
                  "--config; or model=FILE)");
  app->add_option("--format,-f", args->format, "onnx (default) or safetensors");
  app->add_option(
      "--model,-m", args->model,
      "architecture of a safetensors state dict, e.g. yolo26n (model.arch); checkpoints and .pt "
      "files name their own");
  app->add_option("--imgsz", args->imgsz,
                  "ONNX input height and width in px, fixed in the file (default: the config's "
                  "data.imgsz); letterbox images to it");
  auto* batch = app->add_option("--batch", args->batch, "fixed ONNX batch size (default 1)");
  app->add_flag("--dynamic", args->dynamic,
                "ONNX batch dimension left free (\"batch\"); height and width stay fixed at "
                "--imgsz, the anchor grids being constants")
      ->excludes(batch);
  app->add_flag("--half", args->half, "ONNX weights and activations in float16");
  app->add_option("--opset", args->opset, "ONNX opset (17 to 21, default 17)");
  app->add_option("--out,-o", args->out, "output file (default: the weights' path, new extension)");
  return {app, [args]() { return run_export(*args); }};
}

}  // namespace detrain::cli
