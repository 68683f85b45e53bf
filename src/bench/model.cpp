// See model.h. Minimum and median over repeats after one warm-up (bench/abba.h).
#include "bench/model.h"

#include <spdlog/fmt/fmt.h>

#include "bench/abba.h"
#include "compat/runtime.h"
#include "compat/torch_compat.h"
#include "model/yolo_model.h"

namespace detrain::bench {

namespace {

// A scalar that depends on every training output, so backward reaches the whole network.
torch::Tensor sum_of_outputs(const model::TrainOutput& out) {
  auto loss = out.one2many.boxes.sum() + out.one2many.scores.sum();
  if (out.one2one.defined()) loss = loss + out.one2one.boxes.sum() + out.one2one.scores.sum();
  if (out.one2many.kpts.defined()) loss = loss + out.one2many.kpts.sum();
  return loss;
}

}  // namespace

Report bench_model(const config::ResolvedConfig& resolved, const ModelBenchOptions& options) {
  const ModelCase& c = options.model;
  const auto model_options = model_options_of(resolved, c);
  const auto runtime = compat::apply_runtime(resolved.experiment.runtime);
  const auto images = torch::rand({c.batch, 3, c.imgsz, c.imgsz});
  const int repeats = c.repeats;

  model::YoloModel net{nullptr};
  std::vector<std::pair<std::string, Timing>> stages;
  stages.emplace_back("build",
                      time_repeats(repeats, [&] { net = model::make_model(model_options); }));
  net->train();
  stages.emplace_back("train forward (no grad)", time_repeats(repeats, [&] {
                        torch::NoGradGuard no_grad;
                        net->forward_train(images);
                      }));
  stages.emplace_back("train forward + backward", time_repeats(repeats, [&] {
                        net->zero_grad();
                        sum_of_outputs(net->forward_train(images)).backward();
                      }));
  stages.emplace_back("build + forward + backward", time_repeats(repeats, [&] {
                        auto fresh = model::make_model(model_options);
                        const auto out = fresh->forward_train(images);
                        (out.one2many.boxes.sum() + out.one2many.scores.sum()).backward();
                      }));
  const auto eval_forward = [&] {
    torch::NoGradGuard no_grad;
    net->forward_eval(images, 300);
  };
  net->eval();
  stages.emplace_back("eval forward", time_repeats(repeats, eval_forward));
  net->fuse();
  stages.emplace_back("fused eval forward", time_repeats(repeats, eval_forward));

  const std::string name = net->arch().name();
  Report report;
  report.title = fmt::format(
      "{} at {} px, batch {}, {} torch thread(s), LibTorch {}; {} repeats after a warm-up", name,
      c.imgsz, c.batch, runtime.torch_threads, compat::torch_version(), repeats);
  report.head = {{"model", name},
                 {"imgsz", c.imgsz},
                 {"batch", c.batch},
                 {"repeats", repeats},
                 {"threads", runtime.torch_threads},
                 {"torch", compat::torch_version()}};
  report.rows_key = "timings";
  report.columns = {{"stage", "stage"}, {"min ms", "min_ms"}, {"median ms", "median_ms"}};
  for (const auto& [stage, t] : stages)
    report.rows.push_back({label(stage), number(t.min_ms, 1), number(t.median_ms, 1)});
  return report;
}

}  // namespace detrain::bench
