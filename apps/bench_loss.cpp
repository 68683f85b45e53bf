// `detrain bench loss`: how long label assignment and the training criterion take for a
// model's head at a given size, batch and object count (synthetic raw outputs, random boxes),
// and the process's peak memory after each stage; minimum and median over repeats.
#include <spdlog/fmt/fmt.h>
#include <sys/resource.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "bench_common.h"
#include "commands.h"
#include "compat/runtime.h"
#include "compat/torch_compat.h"
#include "geometry/anchors.h"
#include "loss/criterion.h"
#include "model/yolo_model.h"

namespace detrain::cli {

namespace {

struct BenchLossArgs {
  ConfigArgs config;
  std::string arch;
  int64_t imgsz = 640;
  int64_t batch = 2;
  int64_t boxes = 100;
  int repeats = 5;
  bool json = false;
};

struct Stage {
  std::string name;
  Timing timing;
  double peak_rss_mb = 0;  // process peak after the stage
};

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
}

template <class F>
Stage time_stage(const std::string& name, int repeats, F&& run) {
  const Timing timing = time_it(repeats, run);
  return {name, timing, peak_rss_mb()};
}

// Raw outputs shaped like the head's (leaves that take gradients) at imgsz x imgsz.
model::BranchOutput synthetic_branch(const model::HeadOptions& head, int64_t batch, int64_t a,
                                     torch::Generator& gen) {
  model::BranchOutput b;
  b.boxes = (head.reg_max > 1 ? torch::randn({batch, 4 * head.reg_max, a}, gen)
                              : torch::rand({batch, 4, a}, gen) * 3)
                .requires_grad_(true);
  b.scores = (torch::randn({batch, head.nc, a}, gen) - 4).requires_grad_(true);
  if (head.pose()) {
    b.kpts = torch::randn({batch, head.num_keypoint_values(), a}, gen).requires_grad_(true);
    if (head.kind == model::HeadKind::kPose26)
      b.kpts_sigma = torch::randn({batch, head.kpt_shape[0] * 2, a}, gen).requires_grad_(true);
  }
  return b;
}

loss::Targets synthetic_targets(const model::HeadOptions& head, int64_t batch, int64_t per_image,
                                torch::Generator& gen) {
  const int64_t n = batch * per_image;
  loss::Targets t;
  t.batch_idx = torch::arange(batch, torch::kLong).repeat_interleave(per_image);
  t.cls = torch::randint(0, head.nc, {n}, gen, torch::kLong);
  const auto centre = torch::rand({n, 2}, gen) * 0.9 + 0.05;
  const auto size = torch::rand({n, 2}, gen) * 0.3 + 0.005;
  t.boxes_xywhn = torch::cat({centre, size}, 1);
  if (head.pose()) {
    const auto k = head.kpt_shape[0];
    const auto xy = centre.unsqueeze(1) + (torch::rand({n, k, 2}, gen) - 0.5) * size.unsqueeze(1);
    t.keypoints = torch::cat({xy, torch::randint(0, 3, {n, k, 1}, gen).to(torch::kFloat)}, -1);
  }
  return t;
}

int run_bench_loss(const BenchLossArgs& args) {
  auto resolved = args.config.resolve();
  auto& options = resolved.experiment.model;
  if (!args.arch.empty()) options.arch = args.arch;
  const auto runtime = compat::apply_runtime(resolved.experiment.runtime);
  auto net = model::make_model(options);
  const auto head = net->head()->options();
  auto criterion = loss::make_criterion(head, resolved.experiment.loss, {}, net->head()->flow());

  auto gen = at::detail::createCPUGenerator(0);
  const auto sizes = geometry::level_sizes(args.imgsz, args.imgsz, head.strides);
  int64_t a = 0;
  model::TrainOutput out;
  for (const auto& [h, w] : sizes) {
    a += h * w;
    out.feats.push_back(torch::zeros({args.batch, 1, h, w}));
  }
  out.one2many = synthetic_branch(head, args.batch, a, gen);
  if (head.end2end) out.one2one = synthetic_branch(head, args.batch, a, gen);
  const auto targets = synthetic_targets(head, args.batch, args.boxes, gen);
  const std::array<int64_t, 2> hw{args.imgsz, args.imgsz};
  const double setup_rss = peak_rss_mb();

  // The assigner alone, as the one-to-many branch calls it (probabilities and pixel boxes).
  const auto gt = loss::pad_targets(targets, args.batch, hw, out.one2many.scores);
  const auto anchors = geometry::make_anchors(out.feats, head.strides);
  const auto scores = out.one2many.scores.detach().permute({0, 2, 1}).sigmoid().contiguous();
  const auto boxes = (torch::cat({anchors.points - 2, anchors.points + 2}, -1) * anchors.strides)
                         .unsqueeze(0)
                         .expand({args.batch, a, 4})
                         .contiguous();
  loss::AssignerOptions assigner;
  assigner.topk = resolved.experiment.loss.topk;
  assigner.num_classes = head.nc;
  assigner.strides = head.strides;
  std::vector<Stage> stages;
  stages.push_back(time_stage("assigner (one-to-many)", args.repeats, [&] {
    loss::assign(assigner, scores, boxes, anchors.points * anchors.strides, gt.labels,
                 gt.boxes_xyxy_px, gt.mask);
  }));
  stages.push_back(time_stage("criterion forward", args.repeats, [&] {
    torch::NoGradGuard no_grad;
    (*criterion)(out, targets, hw);
  }));
  stages.push_back(time_stage("criterion forward + backward", args.repeats,
                              [&] { (*criterion)(out, targets, hw).total.backward(); }));

  const std::string name = net->arch().name();
  if (args.json) {
    nlohmann::ordered_json j{{"model", name},
                             {"imgsz", args.imgsz},
                             {"anchors", a},
                             {"batch", args.batch},
                             {"boxes_per_image", args.boxes},
                             {"repeats", args.repeats},
                             {"threads", runtime.torch_threads},
                             {"torch", compat::torch_version()},
                             {"setup_peak_rss_mb", setup_rss}};
    for (const auto& s : stages)
      j["timings"].push_back({{"stage", s.name},
                              {"min_ms", s.timing.min_ms},
                              {"median_ms", s.timing.median_ms},
                              {"peak_rss_mb", s.peak_rss_mb}});
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format(
      "{} loss at {} px ({} anchors), batch {}, {} boxes per image, {} torch thread(s), "
      "LibTorch {}; {} repeats after a warm-up; peak RSS after setup {:.0f} MB\n",
      name, args.imgsz, a, args.batch, args.boxes, runtime.torch_threads, compat::torch_version(),
      args.repeats, setup_rss);
  std::cout << fmt::format("  {:<30} {:>9} {:>11} {:>13}\n", "stage", "min ms", "median ms",
                           "peak RSS MB");
  for (const auto& s : stages)
    std::cout << fmt::format("  {:<30} {:>9.1f} {:>11.1f} {:>13.0f}\n", s.name, s.timing.min_ms,
                             s.timing.median_ms, s.peak_rss_mb);
  return 0;
}

}  // namespace

Command add_bench_loss(CLI::App& bench) {
  auto* app = bench.add_subcommand("loss", "label assignment and criterion times of a head");
  auto args = std::make_shared<BenchLossArgs>();
  args->config.add_to(app);
  add_model_bench_options(app, args->arch, args->imgsz, args->repeats, args->json);
  app->add_option("--batch,-b", args->batch, "images (default 2)")->check(CLI::Range(1, 1024));
  app->add_option("--boxes", args->boxes, "objects per image (default 100)")
      ->check(CLI::Range(0, 100000));
  return {app, [args]() { return run_bench_loss(*args); }};
}

}  // namespace detrain::cli
