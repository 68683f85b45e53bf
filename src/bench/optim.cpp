// See optim.h.
#include "bench/optim.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <memory>

#include "bench/abba.h"
#include "bench/optim_figures.h"
#include "compat/runtime.h"
#include "compat/torch_compat.h"
#include "model/yolo_model.h"
#include "optim/optimizer_factory.h"

namespace detrain::bench {

namespace {

// One optimizer on its own copy of the parameters, with the same fixed gradients.
struct Contender {
  std::string name;
  std::vector<model::ParamInfo> infos;  // the model's descriptions with private parameters
  std::vector<torch::Tensor> grads;     // the fixed gradient of each parameter
  std::unique_ptr<optim::Optimizer> opt;
  int64_t ops = 0;  // ATen operator calls of one step
};

std::unique_ptr<Contender> make_contender(const std::string& name,
                                          const std::vector<model::ParamInfo>& model_infos,
                                          const std::vector<torch::Tensor>& grads,
                                          const config::OptimOptions& options) {
  auto c = std::make_unique<Contender>();
  c->name = name;
  c->grads = grads;
  c->infos = model_infos;
  for (auto& info : c->infos) info.param = info.param.detach().clone().requires_grad_();
  c->opt = optim::build_optimizer(c->infos, options, {});  // batch 16, accumulate 4: decay as set
  return c;
}

// Copies the fixed gradients into the parameters' gradients (keeping any storage the optimizer
// gave them); not timed, like a backward pass.
void load_grads(Contender& c) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < c.infos.size(); ++i) {
    auto& grad = c.infos[i].param.mutable_grad();
    if (grad.defined())
      grad.copy_(c.grads[i]);
    else
      grad = c.grads[i].clone();
  }
}

Variant variant_of(Contender& c, const torch::Device& device) {
  return {c.name,
          [&c, device](int) {
            load_grads(c);
            compat::synchronize(device);
          },
          [&c, device](int round) {
            if (round == 1)  // the first step allocates state and workspaces once
              c.ops = count_op_calls([&] { c.opt->step(); });
            else
              c.opt->step();
            compat::synchronize(device);
          }};
}

// The kernel the contender's Newton-Schulz ran ("-" for plain SGD): off the CPU always
// ATen's own ops, i.e. native.
std::string ns_kernel_of(const Contender& c, const torch::Device& device) {
  const auto* musgd = dynamic_cast<const optim::MuSGD*>(c.opt.get());
  if (!musgd || musgd->kind() != "musgd") return "-";
  return device.is_cpu() ? optim::ns_kernel_name(musgd->cpu_ns_kernel()) : "native";
}

double max_abs_diff(const Contender& a, const Contender& b) {
  double worst = 0;
  for (size_t i = 0; i < a.infos.size(); ++i)
    worst = std::max(worst, (a.infos[i].param - b.infos[i].param).abs().max().item<double>());
  return worst;
}

}  // namespace

Report bench_optim(const config::ResolvedConfig& resolved, const OptimBenchOptions& options) {
  auto experiment = resolved.experiment;
  if (!options.arch.empty()) experiment.model.arch = options.arch;
  if (!options.scale.empty()) experiment.model.scale = options.scale;
  if (!options.device.empty()) experiment.runtime.device = options.device;
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
  auto optim_options = experiment.optim;
  std::vector<std::unique_ptr<Contender>> contenders;
  optim_options.optimizer = "sgd";
  contenders.push_back(make_contender("sgd", infos, grads, optim_options));
  const auto kernels = options.ns_kernels.empty()
                           ? std::vector<std::string>{optim_options.ns_kernel}
                           : options.ns_kernels;
  optim_options.optimizer = "musgd";
  optim_options.bucketing = "off";
  optim_options.ns_kernel = kernels.front();
  contenders.push_back(make_contender("musgd off", infos, grads, optim_options));
  optim_options.bucketing = "exact";
  for (const auto& kernel : kernels) {
    optim_options.ns_kernel = kernel;
    const std::string name = kernels.size() > 1 ? "musgd exact " + kernel : "musgd exact";
    contenders.push_back(make_contender(name, infos, grads, optim_options));
  }
  optim_options.ns_kernel = kernels.front();
  std::vector<Variant> variants;
  for (auto& c : contenders) variants.push_back(variant_of(*c, device));
  const AbbaResult timed = run_abba(variants, {options.warmup, options.steps});
  const double load_after = load_average();
  const double peak = device.is_cpu() ? sgemm_peak_gflops() : 0.0;
  constexpr size_t kSgd = 0, kOff = 1, kExact = 2;
  const double diff = max_abs_diff(*contenders[kExact], *contenders[kOff]);

  const auto* musgd = dynamic_cast<const optim::MuSGD*>(contenders[kExact]->opt.get());
  const int64_t matrices = musgd ? musgd->muon_matrices() : 0;
  const size_t keys = musgd ? musgd->matrix_keys().size() : 0;
  const size_t stacked = musgd ? musgd->stacked_buckets() : 0;
  const double gflop = musgd ? newton_schulz_gflop(musgd->matrix_keys()) : 0.0;

  Report report;
  const std::string kernel = ns_kernel_of(*contenders[kExact], device);  // off's and exact's
  std::vector<std::string> exact_kernels;
  for (size_t n = kExact; n < contenders.size(); ++n)
    exact_kernels.push_back(ns_kernel_of(*contenders[n], device));
  report.title = fmt::format(
      "{}: {} trainable tensors, {} Muon matrices in {} keys ({} stacked); {} on {}, {} "
      "thread(s), LibTorch {}, Newton-Schulz {} ({} kernel{}); {} steps after {} warm-up, "
      "interleaved",
      net->arch().name(), infos.size(), matrices, keys, stacked, "fixed random gradients",
      device.str(), runtime.torch_threads, compat::torch_version(), optim_options.ns_dtype,
      fmt::join(exact_kernels, ", "), exact_kernels.size() > 1 ? "s" : "", options.steps,
      options.warmup);
  report.head = {{"model", net->arch().name()},
                 {"device", device.str()},
                 {"threads", runtime.torch_threads},
                 {"torch", compat::torch_version()},
                 {"ns_dtype", optim_options.ns_dtype},
                 {"ns_kernel", kernel},
                 {"cpu_native_bf16_gemm", compat::cpu_has_native_bf16_gemm()},
                 {"steps", options.steps},
                 {"warmup_steps", options.warmup},
                 {"tensors", infos.size()},
                 {"muon_matrices", matrices},
                 {"keys", keys},
                 {"stacked_buckets", stacked},
                 {"ns_gflop_per_step", gflop},
                 {"load_average_before", load_before},
                 {"load_average_after", load_after}};
  if (device.is_cpu()) report.head["sgemm_peak_gflops"] = peak;
  report.rows_key = "optimizers";
  report.columns = {{"optimizer", "name"},
                    {"NS kernel", "ns_kernel"},
                    {"median ms", "median_ms"},
                    {"range ms", ""},
                    {"", "min_ms"},
                    {"", "max_ms"},
                    {"ops/step", "op_calls_per_step"},
                    {"vs off", ""},
                    {"vs sgd", ""},
                    {"GFLOP/s", "ns_gflops"}};
  for (size_t n = 0; n < contenders.size(); ++n) {
    const Timing& t = timed.timings[n];
    const double gflops = n == kSgd ? 0.0 : gflop / t.median_ms * 1e3;
    report.rows.push_back({label(contenders[n]->name), label(ns_kernel_of(*contenders[n], device)),
                           number(t.median_ms, 2),
                           text(fmt::format("{:.2f}-{:.2f}", t.min_ms, t.max_ms)),
                           number(t.min_ms, 2), number(t.max_ms, 2), integer(contenders[n]->ops),
                           text(fmt::format("{:.2f}x", timed.ratio(n, kOff))),
                           text(fmt::format("{:.2f}x", timed.ratio(n, kSgd))),
                           n == kSgd ? Cell{gflops, "-"} : number(gflops, 1)});
  }
  report.tail = {{"exact_vs_off_max_abs_param_diff", diff}};
  report.notes.push_back(fmt::format("max |param exact - param off| after {} steps: {:.3g}",
                                     options.warmup + options.steps, diff));
  report.notes.push_back(fmt::format(
      "Newton-Schulz arithmetic: {:.2f} GFLOP per MuSGD step (GFLOP/s above: that over the whole "
      "step's median)",
      gflop));
  if (device.is_cpu())
    report.notes.push_back(
        fmt::format("practical fp32 peak: {:.1f} GFLOP/s (best 1024^3 sgemm at {} thread(s)); "
                    "Newton-Schulz alone needs >= {:.1f} ms at that rate",
                    peak, runtime.torch_threads, gflop / peak * 1e3));
  report.notes.push_back(
      fmt::format("load average (1 min) before/after: {:.2f} / {:.2f}", load_before, load_after));
  return report;
}

}  // namespace detrain::bench
