// `detrain bench optim`: optimizer step time on a real parameter set with fixed random
// gradients, for SGD, MuSGD `off` (per-parameter Newton-Schulz) and MuSGD `exact` (stacked
// buckets), with the ATen operator calls per step and the max |param difference| exact vs off.
#include <ATen/record_function.h>
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common/timer.h"
#include "compat/runtime.h"
#include "compat/torch_compat.h"
#include "model/yolo_model.h"
#include "optim/newton_schulz.h"
#include "optim/optimizer_factory.h"

namespace detrain::cli {

namespace {

struct BenchOptimArgs {
  ConfigArgs config;
  std::string arch, scale, device;
  int steps = 50;
  int warmup = 2;
  bool json = false;
};

// RecordFunction takes a plain function pointer, so the count cannot live in the caller: one
// counter for every thread, since MuSGD's Newton-Schulz dispatches gemms from intra-op workers.
std::atomic<int64_t> g_op_calls{0};

std::unique_ptr<at::ObserverContext> count_op(const at::RecordFunction&) {
  g_op_calls.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

// ATen operator calls (nested ones included, on any thread) of one call of `run`.
template <class F>
int64_t count_ops(F&& run) {
  g_op_calls = 0;
  const auto handle = at::addGlobalCallback(
      at::RecordFunctionCallback(count_op).needsInputs(false).scopes({at::RecordScope::FUNCTION}));
  run();
  at::removeCallback(handle);
  return g_op_calls.load();
}

// This machine's practical fp32 peak at the current thread count: the best of 5 1024^3 sgemms
// (at::mm_out) after one warm-up, in GFLOP/s.
double sgemm_peak_gflops() {
  constexpr int64_t kN = 1024;
  const auto a = torch::randn({kN, kN}), b = torch::randn({kN, kN});  // [N, N]
  auto c = torch::empty({kN, kN});                                    // [N, N]
  at::mm_out(c, a, b);
  double best_ms = 1e30;
  for (int i = 0; i < 5; ++i) {
    Stopwatch watch;
    at::mm_out(c, a, b);
    best_ms = std::min(best_ms, watch.millis());
  }
  return 2.0 * kN * kN * kN / (best_ms * 1e6);
}

// The 1-minute load average (other processes share the cores), or -1 where /proc has none.
double load_average() {
  std::ifstream in("/proc/loadavg");
  double load = -1;
  in >> load;
  return in ? load : -1;
}

struct Row {
  std::string name;
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int64_t ops = 0;
  std::vector<torch::Tensor> final_params;
};

// One optimizer on its own copy of the parameters, with the same fixed gradients.
struct Variant {
  Row row;
  std::vector<model::ParamInfo> infos;  // the model's descriptions with private parameters
  std::vector<torch::Tensor> grads;     // the fixed gradient of each parameter
  std::unique_ptr<optim::Optimizer> opt;
  std::vector<double> ms;
};

Variant make_variant(const std::string& name, const std::vector<model::ParamInfo>& model_infos,
                     const std::vector<torch::Tensor>& grads, const config::OptimOptions& options) {
  Variant v;
  v.row.name = name;
  v.grads = grads;
  v.infos = model_infos;
  for (auto& info : v.infos) info.param = info.param.detach().clone().requires_grad_();
  v.opt = optim::build_optimizer(v.infos, options, {});  // batch 16, accumulate 4: decay as set
  return v;
}

// Copies the fixed gradients into the parameters' gradients (keeping any storage the optimizer
// gave them); not timed, like a backward pass.
void load_grads(Variant& v) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < v.infos.size(); ++i) {
    auto& grad = v.infos[i].param.mutable_grad();
    if (grad.defined())
      grad.copy_(v.grads[i]);
    else
      grad = v.grads[i].clone();
  }
}

// Steps every variant `warmup + steps` times, interleaved in ABC CBA order so that a load that
// drifts during the run (other processes on the machine) hits each variant alike.
void run_interleaved(std::vector<Variant>& variants, const BenchOptimArgs& args,
                     const torch::Device& device) {
  for (int i = 0; i < args.warmup + args.steps; ++i) {
    for (size_t n = 0; n < variants.size(); ++n) {
      auto& v = variants[i % 2 == 0 ? n : variants.size() - 1 - n];
      load_grads(v);
      compat::synchronize(device);
      Stopwatch watch;
      if (i == 1)  // the first step allocates state and workspaces once
        v.row.ops = count_ops([&] { v.opt->step(); });
      else
        v.opt->step();
      compat::synchronize(device);
      if (i >= args.warmup) v.ms.push_back(watch.millis());
    }
  }
  for (auto& v : variants) {
    std::sort(v.ms.begin(), v.ms.end());
    v.row.median_ms = v.ms[v.ms.size() / 2];
    v.row.min_ms = v.ms.front();
    v.row.max_ms = v.ms.back();
    for (const auto& info : v.infos) v.row.final_params.push_back(info.param.detach().clone());
  }
}

// Newton-Schulz arithmetic of one step: per matrix (r <= c after orienting) 5 x (X X^T: 2 r^2 c,
// A A: 2 r^3, B X: 2 r^2 c). Batching changes none of it, only how it is scheduled.
double ns_gflop(const std::vector<optim::MatrixKey>& keys) {
  double flop = 0;
  for (const auto& key : keys) {
    double rest = 1;
    for (size_t d = 1; d < key.shape.size(); ++d) rest *= static_cast<double>(key.shape[d]);
    const double r = std::min<double>(static_cast<double>(key.shape[0]), rest);
    const double c = std::max<double>(static_cast<double>(key.shape[0]), rest);
    flop += static_cast<double>(key.count) * optim::kNsSteps * (4 * r * r * c + 2 * r * r * r);
  }
  return flop / 1e9;
}

double max_abs_diff(const Row& a, const Row& b) {
  double worst = 0;
  for (size_t i = 0; i < a.final_params.size(); ++i)
    worst = std::max(worst, (a.final_params[i] - b.final_params[i]).abs().max().item<double>());
  return worst;
}

int run_bench_optim(const BenchOptimArgs& args) {
  auto resolved = args.config.resolve();
  auto& experiment = resolved.experiment;
  if (!args.arch.empty()) experiment.model.arch = args.arch;
  if (!args.scale.empty()) experiment.model.scale = args.scale;
  if (!args.device.empty()) experiment.runtime.device = args.device;
  const auto runtime = compat::apply_runtime(experiment.runtime);
  const auto device = compat::parse_device(experiment.runtime.device);

  auto net = model::make_model(experiment.model);
  net->to(device);
  auto infos = net->param_infos();
  infos.erase(std::remove_if(infos.begin(), infos.end(),
                             [](const model::ParamInfo& i) { return !i.trainable; }),
              infos.end());
  torch::manual_seed(555);
  std::vector<torch::Tensor> grads;
  for (const auto& info : infos)
    grads.push_back((torch::randn(info.param.sizes()) * 0.01).to(device));  // [...] as param

  const double load_before = load_average();
  auto options = experiment.optim;
  std::vector<Variant> variants;
  options.optimizer = "sgd";
  variants.push_back(make_variant("sgd", infos, grads, options));
  options.optimizer = "musgd";
  options.bucketing = "off";
  variants.push_back(make_variant("musgd off", infos, grads, options));
  options.bucketing = "exact";
  variants.push_back(make_variant("musgd exact", infos, grads, options));
  run_interleaved(variants, args, device);
  const double load_after = load_average();
  const double peak = device.is_cpu() ? sgemm_peak_gflops() : 0.0;
  const Row &sgd = variants[0].row, &off = variants[1].row, &exact = variants[2].row;
  const double diff = max_abs_diff(exact, off);

  const auto* musgd = dynamic_cast<const optim::MuSGD*>(variants[2].opt.get());
  const int64_t matrices = musgd ? musgd->muon_matrices() : 0;
  const size_t keys = musgd ? musgd->matrix_keys().size() : 0;
  const size_t stacked = musgd ? musgd->stacked_buckets() : 0;
  const double gflop = musgd ? ns_gflop(musgd->matrix_keys()) : 0.0;
  const std::vector<const Row*> rows{&sgd, &off, &exact};
  const int total_steps = args.warmup + args.steps;

  if (args.json) {
    nlohmann::ordered_json out{
        {"model", net->arch().name()},        {"device", device.str()},
        {"threads", runtime.torch_threads},   {"torch", compat::torch_version()},
        {"ns_dtype", options.ns_dtype},       {"steps", args.steps},
        {"warmup_steps", args.warmup},        {"tensors", infos.size()},
        {"muon_matrices", matrices},          {"keys", keys},
        {"stacked_buckets", stacked},         {"ns_gflop_per_step", gflop},
        {"load_average_before", load_before}, {"load_average_after", load_after}};
    if (device.is_cpu()) out["sgemm_peak_gflops"] = peak;
    for (const auto* r : rows)
      out["optimizers"].push_back({{"name", r->name},
                                   {"median_ms", r->median_ms},
                                   {"min_ms", r->min_ms},
                                   {"max_ms", r->max_ms},
                                   {"op_calls_per_step", r->ops},
                                   {"ns_gflops", r == &sgd ? 0.0 : gflop / r->median_ms * 1e3}});
    out["exact_vs_off_max_abs_param_diff"] = diff;
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format(
      "{}: {} trainable tensors, {} Muon matrices in {} keys ({} stacked); {} on {}, {} "
      "thread(s), LibTorch {}, Newton-Schulz {}; {} steps after {} warm-up, interleaved\n",
      net->arch().name(), infos.size(), matrices, keys, stacked, "fixed random gradients",
      device.str(), runtime.torch_threads, compat::torch_version(), options.ns_dtype, args.steps,
      args.warmup);
  std::cout << fmt::format("  {:<12} {:>10} {:>17} {:>10} {:>9} {:>9} {:>9}\n", "optimizer",
                           "median ms", "range ms", "ops/step", "vs off", "vs sgd", "GFLOP/s");
  for (const auto* r : rows)
    std::cout << fmt::format(
        "  {:<12} {:>10.2f} {:>8.2f}-{:<8.2f} {:>10} {:>8.2f}x {:>8.2f}x {:>9}\n", r->name,
        r->median_ms, r->min_ms, r->max_ms, r->ops, r->median_ms / off.median_ms,
        r->median_ms / sgd.median_ms,
        r == &sgd ? std::string("-") : fmt::format("{:.1f}", gflop / r->median_ms * 1e3));
  std::cout << fmt::format("  max |param exact - param off| after {} steps: {:.3g}\n", total_steps,
                           diff);
  std::cout << fmt::format(
      "  Newton-Schulz arithmetic: {:.2f} GFLOP per MuSGD step (GFLOP/s above: that over the whole "
      "step's median)\n",
      gflop);
  if (device.is_cpu())
    std::cout << fmt::format(
        "  practical fp32 peak: {:.1f} GFLOP/s (best 1024^3 sgemm at {} thread(s)); "
        "Newton-Schulz alone needs >= {:.1f} ms at that rate\n",
        peak, runtime.torch_threads, gflop / peak * 1e3);
  std::cout << fmt::format("  load average (1 min) before/after: {:.2f} / {:.2f}\n", load_before,
                           load_after);
  return 0;
}

}  // namespace

Command add_bench_optim(CLI::App& bench) {
  auto* app = bench.add_subcommand("optim", "optimizer step time: SGD, MuSGD off, MuSGD exact");
  auto args = std::make_shared<BenchOptimArgs>();
  args->config.add_to(app);
  app->add_option("--model,-m", args->arch, "architecture YAML (default model.arch)");
  app->add_option("--scale", args->scale, "model scale n/s/m/l/x (default model.scale)");
  app->add_option("--steps", args->steps, "timed steps per optimizer (default 50)")
      ->check(CLI::Range(1, 100000));
  app->add_option("--device", args->device, "cpu or cuda[:N] (default runtime.device)");
  app->add_flag("--json", args->json, "print JSON instead of a table");
  return {app, [args]() { return run_bench_optim(*args); }};
}

}  // namespace detrain::cli
