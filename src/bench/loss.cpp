// See loss.h. Minimum and median over repeats after one warm-up (bench/abba.h).
#include "bench/loss.h"

#include <spdlog/fmt/fmt.h>

#include <array>
#include <functional>

#include "bench/abba.h"
#include "common/memory.h"
#include "compat/runtime.h"
#include "compat/torch_compat.h"
#include "geometry/anchors.h"
#include "loss/criterion.h"
#include "model/yolo_model.h"

namespace detrain::bench {

namespace {

double peak_rss_mb() {
  return static_cast<double>(peak_resident_memory_bytes()) / (1024.0 * 1024.0);
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

}  // namespace

Report bench_loss(const config::ResolvedConfig& resolved, const LossBenchOptions& options) {
  const ModelCase& c = options.model;
  const auto runtime = compat::apply_runtime(resolved.experiment.runtime);
  auto net = model::make_model(model_options_of(resolved, c));
  const auto head = net->head()->options();
  auto criterion = loss::make_criterion(head, resolved.experiment.loss, {}, net->head()->flow());
  const int64_t batch = c.batch;

  auto gen = at::detail::createCPUGenerator(0);
  const auto sizes = geometry::level_sizes(c.imgsz, c.imgsz, head.strides);
  int64_t a = 0;
  model::TrainOutput out;
  for (const auto& [h, w] : sizes) {
    a += h * w;
    out.feats.push_back(torch::zeros({batch, 1, h, w}));
  }
  out.one2many = synthetic_branch(head, batch, a, gen);
  if (head.end2end) out.one2one = synthetic_branch(head, batch, a, gen);
  const auto targets = synthetic_targets(head, batch, options.boxes, gen);
  const std::array<int64_t, 2> hw{c.imgsz, c.imgsz};
  const double setup_rss = peak_rss_mb();

  // The assigner alone, as the one-to-many branch calls it (probabilities and pixel boxes).
  const auto gt = loss::pad_targets(targets, batch, hw, out.one2many.scores);
  const auto anchors = geometry::make_anchors(out.feats, head.strides);
  const auto scores = out.one2many.scores.detach().permute({0, 2, 1}).sigmoid().contiguous();
  const auto boxes = (torch::cat({anchors.points - 2, anchors.points + 2}, -1) * anchors.strides)
                         .unsqueeze(0)
                         .expand({batch, a, 4})
                         .contiguous();
  loss::AssignerOptions assigner;
  assigner.topk = resolved.experiment.loss.topk;
  assigner.num_classes = head.nc;
  assigner.strides = head.strides;

  Report report;
  report.rows_key = "timings";
  report.columns = {{"stage", "stage"},
                    {"min ms", "min_ms"},
                    {"median ms", "median_ms"},
                    {"peak RSS MB", "peak_rss_mb"}};
  // The process peak is read right after each stage, so a row shows what that stage needed.
  const auto stage = [&](const std::string& name, const std::function<void()>& run) {
    const Timing t = time_repeats(c.repeats, run);
    report.rows.push_back(
        {label(name), number(t.min_ms, 1), number(t.median_ms, 1), number(peak_rss_mb(), 0)});
  };
  stage("assigner (one-to-many)", [&] {
    loss::assign(assigner, scores, boxes, anchors.points * anchors.strides, gt.labels,
                 gt.boxes_xyxy_px, gt.mask);
  });
  stage("criterion forward", [&] {
    torch::NoGradGuard no_grad;
    (*criterion)(out, targets, hw);
  });
  stage("criterion forward + backward", [&] { (*criterion)(out, targets, hw).total.backward(); });

  const std::string name = net->arch().name();
  report.title = fmt::format(
      "{} loss at {} px ({} anchors), batch {}, {} boxes per image, {} torch thread(s), "
      "LibTorch {}; {} repeats after a warm-up; peak RSS after setup {:.0f} MB",
      name, c.imgsz, a, batch, options.boxes, runtime.torch_threads, compat::torch_version(),
      c.repeats, setup_rss);
  report.head = {{"model", name},
                 {"imgsz", c.imgsz},
                 {"anchors", a},
                 {"batch", batch},
                 {"boxes_per_image", options.boxes},
                 {"repeats", c.repeats},
                 {"threads", runtime.torch_threads},
                 {"torch", compat::torch_version()},
                 {"setup_peak_rss_mb", setup_rss}};
  return report;
}

}  // namespace detrain::bench
