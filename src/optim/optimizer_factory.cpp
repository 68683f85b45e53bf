// Optimizer factory; see optimizer_factory.h.
#include "optim/optimizer_factory.h"

#include <cstdio>
#include <cstdlib>

#include "common/errors.h"
#include "optim/adamw.h"
#include "optim/param_groups.h"

namespace detrain::optim {

namespace {

// Python's round(x, 6): the decimal nearest to the exact binary value (printf rounds exactly).
double round_6(double x) {
  char text[64];
  std::snprintf(text, sizeof text, "%.6f", x);
  return std::strtod(text, nullptr);
}

constexpr int64_t kAutoMuSGDIterations = 10000;

}  // namespace

OptimizerChoice choose_optimizer(const config::OptimOptions& options, int64_t total_iterations,
                                 int64_t nc) {
  if (options.optimizer != "auto") return {options.optimizer, options.lr0, options.momentum, false};
  if (total_iterations > kAutoMuSGDIterations) return {"musgd", 0.01, 0.9, true};
  return {"adamw", round_6(0.002 * 5 / static_cast<double>(4 + nc)), 0.9, true};
}

Bucketing parse_bucketing(const std::string& text) {
  if (text == "exact") return Bucketing::kExact;
  if (text == "off") return Bucketing::kOff;
  throw ConfigError("optim.bucketing=" + text + " is unknown; use optim.bucketing=exact or off");
}

torch::ScalarType parse_ns_dtype(const std::string& text) {
  if (text == "bf16") return torch::kBFloat16;
  if (text == "fp32") return torch::kFloat;
  throw ConfigError("optim.ns_dtype=" + text + " is unknown; use optim.ns_dtype=bf16 or fp32");
}

NsKernel parse_ns_kernel(const std::string& text) {
  for (const auto kernel : {NsKernel::kAuto, NsKernel::kNative, NsKernel::kEmulated})
    if (text == ns_kernel_name(kernel)) return kernel;
  throw ConfigError("optim.ns_kernel=" + text +
                    " is unknown; use optim.ns_kernel=auto, native or emulated");
}

std::unique_ptr<Optimizer> build_optimizer(const std::vector<model::ParamInfo>& params,
                                           const config::OptimOptions& options,
                                           const OptimizerRun& run) {
  const auto choice = choose_optimizer(options, run.total_iterations, run.nc);
  ParamGroupSettings settings;
  settings.muon = choice.kind == "musgd";
  settings.lr0 = choice.lr0;
  settings.cls_lr_mult = options.cls_lr_mult;
  settings.weight_decay =
      batch_scaled_decay(options.weight_decay, run.batch, run.accumulate, run.nbs);
  const auto groups = build_param_groups(params, settings);

  if (choice.kind == "adamw") {
    std::vector<AdamWGroup> adam;
    for (const auto& g : groups) {
      AdamWOptions o;
      o.lr = g.lr;
      o.beta1 = choice.momentum;
      o.weight_decay = g.weight_decay;
      adam.push_back({g.name, o, g.names, g.params});
    }
    return std::make_unique<AdamW>(std::move(adam));
  }
  if (choice.kind != "musgd" && choice.kind != "sgd")
    throw ConfigError("optim.optimizer=" + choice.kind +
                      " is unknown; use musgd, sgd, adamw or auto");
  MuSGDSettings musgd;
  musgd.kind = choice.kind;
  musgd.bucketing = parse_bucketing(options.bucketing);
  musgd.ns_dtype = parse_ns_dtype(options.ns_dtype);
  musgd.ns_kernel = parse_ns_kernel(options.ns_kernel);
  std::vector<MuSGDGroup> sgd;
  for (const auto& g : groups) {
    MuSGDOptions o;
    o.lr = g.lr;
    o.momentum = choice.momentum;
    o.weight_decay = g.weight_decay;
    o.nesterov = options.nesterov;
    o.w_muon = g.muon && settings.muon ? options.muon_w : 0.0;
    o.w_sgd = options.sgd_w;
    sgd.push_back({g.name, o, g.names, g.params});
  }
  return std::make_unique<MuSGD>(std::move(sgd), musgd);
}

}  // namespace detrain::optim
