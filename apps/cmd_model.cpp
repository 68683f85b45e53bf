// `detrain model`: builds an architecture from its YAML and prints the layer table, totals
// (layers, parameters, GFLOPs at --imgsz), strides and output shapes, and with --census the
// MuSGD census; --json prints the same as one JSON object.
#include <spdlog/fmt/fmt.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "command_table.h"
#include "commands.h"
#include "common/errors.h"
#include "common/strings.h"
#include "compat/runtime.h"
#include "geometry/anchors.h"
#include "model/census.h"
#include "model/state_dict.h"
#include "model/yolo_model.h"
#include "optim/musgd_census.h"
#include "optim/param_roles.h"
#include "weights/ultralytics_model.h"

namespace detrain::cli {

namespace {

struct ModelArgs {
  ConfigArgs config;
  std::string arch, scale, weights;
  int64_t nc = -1;
  int64_t imgsz = 640;
  bool census = false, fuse = false, json = false;
};

std::string shape_text(const std::vector<int64_t>& shape) {
  std::vector<std::string> parts;
  for (int64_t d : shape) parts.push_back(std::to_string(d));
  return "(" + join(parts, ", ") + ")";
}

// Output shapes for a batch B at imgsz, as documented in heads.h.
nlohmann::ordered_json output_shapes(const model::YoloModelImpl& m, int64_t anchors) {
  const auto& a = m.arch();
  const int64_t nk = a.kpt_shape[0] * a.kpt_shape[1];
  nlohmann::ordered_json train, eval;
  if (!m.fused()) {
    train["boxes"] = {"B", 4 * a.reg_max, anchors};
    train["scores"] = {"B", a.nc, anchors};
    if (nk) train["kpts"] = {"B", nk, anchors};
    if (nk && m.head()->options().kind == model::HeadKind::kPose26)
      train["kpts_sigma"] = {"B", a.kpt_shape[0] * 2, anchors};
    train["branches"] = a.end2end ? nlohmann::ordered_json{"one2many", "one2one"}
                                  : nlohmann::ordered_json{"one2many"};
  }
  eval["decoded"] = {"B", 4 + a.nc + nk, anchors};
  if (a.end2end) eval["detections"] = {"B", std::min<int64_t>(300, anchors), 6 + nk};
  return {{"train", train}, {"eval", eval}};
}

std::string dims_text(const nlohmann::ordered_json& dims) {
  std::vector<std::string> parts;
  for (const auto& d : dims) parts.push_back(d.is_string() ? d.get<std::string>() : d.dump());
  return "[" + join(parts, ", ") + "]";
}

// The architecture from --model/--scale/--nc, or the one an Ultralytics .pt carries, with
// --weights loaded and --fuse applied; model.arch becomes the one built.
model::YoloModel build_model(const ModelArgs& args, config::ResolvedConfig& resolved) {
  auto& options = resolved.experiment.model;
  model::YoloModel net{nullptr};
  if (weights::is_ultralytics_pt(options.weights)) {
    // The file's own architecture, classes and tensors (an explicit --arch must match it).
    const weights::UltralyticsModelFile file = weights::read_ultralytics_pt(options.weights);
    const bool arch_given = !args.arch.empty() || resolved.origin["model.arch"] != "default";
    config::ModelOptions o = weights::pt_model_options(file, options, arch_given);
    if (!args.scale.empty()) o.scale = args.scale;
    options.arch = o.arch;
    net = weights::model_from_pt(file, o);
  } else {
    model::BuildOptions build;
    build.arch = options.arch;
    build.scale = args.scale;
    if (build.scale.empty() && model::resolve_arch(options.arch).second.empty())
      build.scale = options.scale;
    build.nc = options.nc;
    net = model::YoloModel(build);
    if (!options.weights.empty()) model::load_weights(*net, options.weights);
  }
  if (args.fuse) net->fuse();
  return net;
}

// Everything either view (tables or --json) prints, measured once.
struct ModelReport {
  std::string weights;
  int64_t imgsz = 0;
  model::ModelTotals totals;
  double gflops = 0;
  int64_t anchors = 0;
  nlohmann::ordered_json layers, outputs;
  std::optional<optim::Census> census;
};

ModelReport measure(model::YoloModelImpl& net, const ModelArgs& args, const std::string& weights) {
  ModelReport r;
  r.weights = weights;
  r.imgsz = args.imgsz;
  r.totals = model::model_totals(net);
  r.gflops = model::gflops(net, args.imgsz);
  for (const auto& [h, w] : geometry::level_sizes(args.imgsz, args.imgsz, net.arch().strides))
    r.anchors += h * w;
  r.layers = nlohmann::ordered_json::array();
  for (size_t i = 0; i < net.rows().size(); ++i) {
    const auto& row = net.rows()[i];
    r.layers.push_back({{"index", row.index},
                        {"from", row.from_text},
                        {"repeats", row.repeats},
                        {"params", model::layer_parameters(net, i)},
                        {"module", row.module},
                        {"args", row.args}});
  }
  r.outputs = output_shapes(net, r.anchors);
  if (args.census) r.census = optim::census(net.param_infos());
  return r;
}

nlohmann::ordered_json census_json(const optim::Census& census) {
  nlohmann::ordered_json c = {{"tensors", census.tensors},
                              {"matrices", census.matrices},
                              {"frozen_matrices", census.frozen_matrices},
                              {"distinct_shapes", census.distinct_shapes},
                              {"keys", census.keys},
                              {"matrices_per_shape", census.matrices_per_shape()},
                              {"matrices_per_key", census.matrices_per_key()},
                              {"row_buckets", census.row_buckets},
                              {"col_buckets", census.col_buckets}};
  auto groups = nlohmann::ordered_json::array();
  for (const auto& g : census.groups)
    groups.push_back({{"group", g.group},
                      {"name", g.name},
                      {"tensors", g.tensors},
                      {"parameters", g.parameters},
                      {"matrices", g.matrices},
                      {"keys", g.keys}});
  c["groups"] = groups;
  auto buckets = nlohmann::ordered_json::array();
  for (const auto& b : census.buckets)
    buckets.push_back({{"group", optim::group_name(b.group)},
                       {"shape", b.shape},
                       {"dtype", b.dtype},
                       {"device", b.device},
                       {"count", b.count}});
  c["buckets"] = buckets;
  return c;
}

nlohmann::ordered_json report_json(const model::YoloModelImpl& net, const ModelReport& r) {
  const auto& arch = net.arch();
  nlohmann::ordered_json out;
  out["model"] = arch.name();
  out["yaml"] = arch.path;
  out["scale"] = arch.scale;
  out["depth"] = arch.depth;
  out["width"] = arch.width;
  out["max_channels"] = arch.max_channels;
  out["nc"] = arch.nc;
  if (arch.kpt_shape[0]) out["kpt_shape"] = arch.kpt_shape;
  out["reg_max"] = arch.reg_max;
  out["end2end"] = arch.end2end;
  out["fused"] = net.fused();
  out["weights"] = r.weights;
  out["strides"] = arch.strides;
  out["imgsz"] = r.imgsz;
  out["anchors"] = r.anchors;
  out["layers"] = r.layers;
  out["totals"] = {{"layers", r.totals.layers},
                   {"parameters", r.totals.parameters},
                   {"gradients", r.totals.gradients},
                   {"tensors", r.totals.tensors},
                   {"gflops", r.gflops},
                   {"gflops_graph", net.fused() ? "inference" : "training"}};
  out["outputs"] = r.outputs;
  if (r.census) out["census"] = census_json(*r.census);
  return out;
}

// The first line: name, YAML, scale factors, classes, head kind.
void print_header(std::ostream& text, const model::YoloModelImpl& net) {
  const auto& arch = net.arch();
  text << fmt::format("{} ({}, scale {}: depth {:.2f}, width {:.2f}, max channels {}) · nc {}",
                      arch.name(), arch.path, arch.scale, arch.depth, arch.width, arch.max_channels,
                      arch.nc);
  if (arch.kpt_shape[0])
    text << fmt::format(" · kpt_shape [{}, {}]", arch.kpt_shape[0], arch.kpt_shape[1]);
  text << fmt::format(" · reg_max {} · {}{}\n\n", arch.reg_max,
                      arch.end2end ? "end2end (one-to-one top-k, no NMS)" : "NMS",
                      net.fused() ? " · fused" : "");
}

void print_layer_table(std::ostream& text, const nlohmann::ordered_json& layers) {
  text << fmt::format("{:>4}  {:<14} {:>2} {:>11}  {:<12} {}\n", "#", "from", "n", "params",
                      "module", "arguments");
  for (const auto& layer : layers) {
    text << fmt::format("{:>4}  {:<14} {:>2} {:>11}  {:<12} {}\n", layer["index"].get<int>(),
                        layer["from"].get<std::string>(), layer["repeats"].get<int>(),
                        with_thousands(layer["params"].get<int64_t>()),
                        layer["module"].get<std::string>(), layer["args"].get<std::string>());
  }
}

// Totals, strides and anchors, and the output shapes of both graphs.
void print_summary(std::ostream& text, const model::YoloModelImpl& net, const ModelReport& r) {
  const auto& arch = net.arch();
  text << fmt::format(
      "\n{} summary{}: {} layers, {} parameters, {} gradients, {:.1f} GFLOPs "
      "({} graph at {} px)\n",
      arch.name(), net.fused() ? " (fused)" : "", r.totals.layers,
      with_thousands(r.totals.parameters), with_thousands(r.totals.gradients), r.gflops,
      net.fused() ? "inference" : "training", r.imgsz);
  std::vector<std::string> stride_text;
  for (int64_t s : arch.strides) stride_text.push_back(std::to_string(s));
  text << fmt::format("strides {} · {} anchors at {} px\n", join(stride_text, ", "), r.anchors,
                      r.imgsz);
  std::vector<std::string> train_parts, eval_parts;
  for (const auto& [key, dims] : r.outputs["train"].items())
    if (key != "branches") train_parts.push_back(key + " " + dims_text(dims));
  for (const auto& [key, dims] : r.outputs["eval"].items())
    eval_parts.push_back(key + " " + dims_text(dims));
  if (!train_parts.empty())
    text << fmt::format("train outputs per branch ({}): {}\n",
                        arch.end2end ? "one2many, one2one" : "one2many", join(train_parts, ", "));
  text << fmt::format("eval outputs: {}\n", join(eval_parts, ", "));
}

void print_census(std::ostream& text, const optim::Census& census) {
  text << fmt::format(
      "\nMuSGD census (matrices: ndim >= 2 and trainable)\n"
      "  {} matrices{} · {} distinct shapes · {} (group, shape) keys · {:.2f} matrices per "
      "shape · {:.2f} per key · row buckets {} · col buckets {}\n\n",
      census.matrices,
      census.frozen_matrices ? fmt::format(" (+{} frozen)", census.frozen_matrices) : "",
      census.distinct_shapes, census.keys, census.matrices_per_shape(), census.matrices_per_key(),
      census.row_buckets, census.col_buckets);
  text << fmt::format("  {:<3} {:<10} {:>8} {:>12} {:>9} {:>5}\n", "#", "group", "tensors",
                      "params", "matrices", "keys");
  for (const auto& g : census.groups)
    text << fmt::format("  {:<3} {:<10} {:>8} {:>12} {:>9} {:>5}\n", g.group, g.name, g.tensors,
                        with_thousands(g.parameters), g.matrices, g.keys);
  text << "\n  largest buckets (one batched Newton-Schulz each)\n";
  text << fmt::format("  {:<10} {:>5}  {}\n", "group", "count", "shape");
  for (size_t i = 0; i < census.buckets.size() && i < 12; ++i) {
    const auto& b = census.buckets[i];
    text << fmt::format("  {:<10} {:>5}  {}\n", optim::group_name(b.group), b.count,
                        shape_text(b.shape));
  }
}

int run_model(const ModelArgs& args) {
  auto resolved = args.config.resolve();
  auto& options = resolved.experiment.model;
  if (!args.arch.empty()) options.arch = args.arch;
  if (!args.weights.empty()) options.weights = args.weights;
  if (args.nc >= 0) options.nc = args.nc;
  if (args.imgsz <= 0)
    throw ConfigError("--imgsz must be positive, got " + std::to_string(args.imgsz));
  compat::apply_runtime(resolved.experiment.runtime);
  torch::NoGradGuard no_grad;  // nothing here trains

  model::YoloModel net = build_model(args, resolved);
  const ModelReport report = measure(*net, args, options.weights);
  if (args.json) {
    std::cout << report_json(*net, report).dump(2) << "\n";
    return 0;
  }
  std::ostringstream text;
  print_header(text, *net);
  print_layer_table(text, report.layers);
  print_summary(text, *net, report);
  if (report.census) print_census(text, *report.census);
  std::cout << text.str();
  return 0;
}

}  // namespace

Command add_model_command(CLI::App& root) {
  auto* app = root.add_subcommand("model", command_description("model"));
  auto args = std::make_shared<ModelArgs>();
  args->config.add_to(app);
  app->add_option("--model,-m", args->arch,
                  "architecture YAML (models/yolo26.yaml, yolo26s, yolo11n-pose.yaml, ...); "
                  "default model.arch");
  app->add_option("--scale", args->scale, "scale n/s/m/l/x; default model.scale")
      ->check(CLI::IsMember({"n", "s", "m", "l", "x"}));
  app->add_option("--nc", args->nc, "number of classes; default model.nc, else the YAML's")
      ->check(CLI::Range(1, 100000));
  app->add_option("--imgsz", args->imgsz, "square input size for GFLOPs and anchors (default 640)")
      ->check(CLI::Range(32, 8192));
  app->add_option("--weights,-w", args->weights,
                  "an Ultralytics .pt (its architecture) or a safetensors state dict (strict, by "
                  "name)");
  app->add_flag("--census", args->census, "print the MuSGD parameter census");
  app->add_flag("--fuse", args->fuse,
                "fold BN into convs and drop training-only branches (inference model)");
  app->add_flag("--json", args->json, "print one JSON object instead of tables");
  return {app, [args]() { return run_model(*args); }};
}

}  // namespace detrain::cli
