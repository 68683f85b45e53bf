// `detrain bench model`: how long building a network and running it take (build, training
// forward, forward + backward, inference, fused inference) at a given size and batch; minimum
// and median over repeats after a warm-up, as a table or JSON.
#include <spdlog/fmt/fmt.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "bench_common.h"
#include "commands.h"
#include "compat/runtime.h"
#include "compat/torch_compat.h"
#include "model/yolo_model.h"

namespace detrain::cli {

namespace {

struct BenchModelArgs {
  ConfigArgs config;
  std::string arch;
  int64_t imgsz = 256;
  int64_t batch = 1;
  int repeats = 5;
  bool json = false;
};

int run_bench_model(const BenchModelArgs& args) {
  auto resolved = args.config.resolve();
  auto& options = resolved.experiment.model;
  if (!args.arch.empty()) options.arch = args.arch;
  const auto runtime = compat::apply_runtime(resolved.experiment.runtime);
  const auto images = torch::rand({args.batch, 3, args.imgsz, args.imgsz});

  model::YoloModel net{nullptr};
  const Timing build = time_it(args.repeats, [&] { net = model::make_model(options); });
  const std::string name = net->arch().name();

  net->train();
  const Timing forward = time_it(args.repeats, [&] {
    torch::NoGradGuard no_grad;
    net->forward_train(images);
  });
  const Timing step = time_it(args.repeats, [&] {
    net->zero_grad();
    const auto out = net->forward_train(images);
    auto loss = out.one2many.boxes.sum() + out.one2many.scores.sum();
    if (out.one2one.defined()) loss = loss + out.one2one.boxes.sum() + out.one2one.scores.sum();
    if (out.one2many.kpts.defined()) loss = loss + out.one2many.kpts.sum();
    loss.backward();
  });
  const Timing build_step = time_it(args.repeats, [&] {
    auto fresh = model::make_model(options);
    const auto out = fresh->forward_train(images);
    (out.one2many.boxes.sum() + out.one2many.scores.sum()).backward();
  });
  net->eval();
  const Timing eval = time_it(args.repeats, [&] {
    torch::NoGradGuard no_grad;
    net->forward_eval(images, 300);
  });
  net->fuse();
  const Timing fused = time_it(args.repeats, [&] {
    torch::NoGradGuard no_grad;
    net->forward_eval(images, 300);
  });

  const std::vector<std::pair<std::string, Timing>> rows{{"build", build},
                                                         {"train forward (no grad)", forward},
                                                         {"train forward + backward", step},
                                                         {"build + forward + backward", build_step},
                                                         {"eval forward", eval},
                                                         {"fused eval forward", fused}};
  if (args.json) {
    nlohmann::ordered_json out{{"model", name},
                               {"imgsz", args.imgsz},
                               {"batch", args.batch},
                               {"repeats", args.repeats},
                               {"threads", runtime.torch_threads},
                               {"torch", compat::torch_version()}};
    for (const auto& [what, t] : rows)
      out["timings"].push_back({{"stage", what}, {"min_ms", t.min_ms}, {"median_ms", t.median_ms}});
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format(
      "{} at {} px, batch {}, {} torch thread(s), LibTorch {}; {} repeats "
      "after a warm-up\n",
      name, args.imgsz, args.batch, runtime.torch_threads, compat::torch_version(), args.repeats);
  std::cout << fmt::format("  {:<28} {:>9} {:>11}\n", "stage", "min ms", "median ms");
  for (const auto& [what, t] : rows)
    std::cout << fmt::format("  {:<28} {:>9.1f} {:>11.1f}\n", what, t.min_ms, t.median_ms);
  return 0;
}

}  // namespace

Command add_bench_model(CLI::App& bench) {
  auto* app = bench.add_subcommand("model", "build / forward / backward times of a model");
  auto args = std::make_shared<BenchModelArgs>();
  args->config.add_to(app);
  add_model_bench_options(app, args->arch, args->imgsz, args->repeats, args->json);
  app->add_option("--batch,-b", args->batch, "images per forward (default 1)")
      ->check(CLI::Range(1, 1024));
  return {app, [args]() { return run_bench_model(*args); }};
}

}  // namespace detrain::cli
