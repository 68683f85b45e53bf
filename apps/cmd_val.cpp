// `detrain val`: validates a checkpoint (its EMA weights) or a safetensors state dict on a data
// set's split with the trainer's own validation, prints the COCO table and pycocotools'
// summary lines, and writes predictions.json and the stats as JSON on request.
#include <spdlog/spdlog.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "command_table.h"
#include "commands.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "compat/runtime.h"
#include "compat/torch_compat.h"
#include "data/dataset.h"
#include "eval/predictions_json.h"
#include "infer/class_table.h"
#include "model/channels_last.h"
#include "model/precision.h"
#include "report/numbered_dir.h"
#include "report/val_plots.h"
#include "tasks/inference_model.h"
#include "tasks/validation_run.h"

namespace detrain::cli {

namespace {

struct ValArgs {
  ConfigArgs config;
  std::string weights, data, split, json_out, save_json, out, model;
  bool plots = false;
};

int run_val(const ValArgs& args) {
  std::vector<std::string> overrides = args.config.user_overrides();
  const std::string weights = args.config.take_weights(overrides, args.weights);
  if (!args.model.empty()) overrides.push_back("model.arch=" + args.model);
  if (!args.data.empty()) overrides.push_back("data.dataset=" + args.data);
  if (!args.split.empty()) overrides.push_back("val.split=" + args.split);
  const config::ResolvedConfig given = config::resolve(args.config.config_file, {});
  tasks::InferenceModel m = tasks::load_inference_model(weights, given, overrides);
  const config::Experiment& x = m.config.experiment;
  compat::apply_runtime(x.runtime);
  const torch::Device device = compat::parse_device(x.runtime.device);
  m.model->to(device);
  const model::MemoryFormatDecision layout =
      model::choose_memory_format(x.runtime.memory_format, device);
  m.model->set_memory_format(layout.format);
  spdlog::debug("memory format {}", model::describe(layout));
  data::DatasetInfo dataset = data::load_dataset(x.data.dataset, x.data.root);
  tasks::use_file_class_names(m, dataset);
  if (m.model->head()->options().pose() && !dataset.has_keypoints())
    throw DataError(x.data.dataset + " has no kpt_shape but " + weights +
                    " is a pose model; add kpt_shape, flip_idx and oks_sigmas to the descriptor");
  if (m.model->arch().nc != dataset.nc())
    throw ModelError(weights + " predicts " + std::to_string(m.model->arch().nc) + " classes but " +
                     x.data.dataset + " has " + std::to_string(dataset.nc()) +
                     "; validate on the data set it was "
                     "trained for");
  // fp32, as `yolo val` runs (its quantize is unset: fp32 on CPU and GPU), so that scores equal
  // the reference's; train.precision=bf16-always asks for BF16 autocast.
  const bool bf16 = model::parse_precision(x.train.precision) == model::Precision::kBf16Always;
  tasks::ValidationRun validation(x, dataset, x.val.split, *m.model, device, bf16,
                                  tasks::ValCaller::kStandalone);
  // --plots: the confusion matrices, curves and val_batch images of a training run's end.
  std::optional<report::ValPlots> plots;
  std::string plots_dir;
  if (args.plots) {
    plots_dir = args.out.empty()
                    ? report::create_numbered_dir(args.config.project(overrides), "val", false)
                    : args.out;
    ensure_writable_dir(plots_dir);
    plots.emplace(dataset, validation.records(), plots_dir, x.train.plot_batches, x.val.conf);
  }
  auto observer = [&](int64_t index, const infer::ValBatch& b,
                      const std::vector<infer::ImageDetections>& dets) {
    if (plots) plots->add(index, b, dets);
  };
  const infer::ValidationResult r = validation.run(*m.model, observer);
  if (plots) plots->save(r);
  std::vector<std::vector<int32_t>> gt_classes;
  for (const auto& record : validation.records()) gt_classes.push_back(record.classes);
  std::cout << infer::class_table(r.box, r.keypoints ? &*r.keypoints : nullptr, gt_classes,
                                  dataset.names, dataset.coco_ids)
            << "\n"
            << infer::stats_table(r);
  std::cout << "bbox:\n";
  for (const auto& line : r.box.summary_lines()) std::cout << line << "\n";
  if (r.keypoints) {
    std::cout << "keypoints:\n";
    for (const auto& line : r.keypoints->summary_lines()) std::cout << line << "\n";
  }
  std::cout << "fitness " << r.fitness() << " on " << r.images << " images ("
            << r.inference_s + r.postprocess_s << " s inference, " << r.evaluate_s
            << " s COCO evaluation)\n";
  if (plots) std::cout << "plots in " << plots_dir << "\n";
  if (!args.save_json.empty()) eval::write_predictions_json(args.save_json, r.records);
  if (!args.json_out.empty()) {
    nlohmann::ordered_json j;
    j["weights"] = weights;
    j["data"] = x.data.dataset;
    j["split"] = x.val.split;
    j["images"] = r.images;
    j["bbox"] = r.box.stats;
    if (r.keypoints) j["keypoints"] = r.keypoints->stats;
    j["fitness"] = r.fitness();
    write_file_atomic(args.json_out, j.dump(2) + "\n");
  }
  return 0;
}

}  // namespace

Command add_val_command(CLI::App& root) {
  auto* app = root.add_subcommand("val", command_description("val"));
  auto args = std::make_shared<ValArgs>();
  args->config.add_to(app);
  app->add_option("--weights,-w", args->weights,
                  "Ultralytics .pt, checkpoint (.ckpt) or safetensors weights (or model=FILE)");
  app->add_option("--data,-d", args->data, "data-set descriptor (default: the checkpoint's)");
  app->add_option("--split", args->split, "split to validate: val or train");
  app->add_option(
      "--model,-m", args->model,
      "architecture of a safetensors state dict, e.g. yolo26n (model.arch); checkpoints and .pt "
      "files name their own");
  app->add_option("--json-out", args->json_out, "write the stats as JSON");
  app->add_option("--save-json", args->save_json, "write the predictions (COCO results format)");
  app->add_flag("--plots", args->plots,
                "draw the confusion matrices, PR/F1/P/R curves and val_batch images");
  app->add_option("--out,-o", args->out, "folder for --plots (default: a new runs/val, val2, ...)");
  return {app, [args]() { return run_val(*args); }};
}

}  // namespace detrain::cli
