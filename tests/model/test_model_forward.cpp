// Forward passes on random weights: output shapes at batch 1 and 4 for detect and pose, strides
// and anchors at 640, the end-to-end top-k against the decoded tensor, Conv+BN fusion, the
// gradient paths (one-to-one heads are detached from the backbone), GFLOPs.
#include <catch2/catch.hpp>

#include "geometry/anchors.h"
#include "model/batchnorm_fixtures.h"
#include "model/census.h"
#include "model/tensor_checks.h"
#include "model/yolo_model.h"

using namespace detrain;
using namespace detrain::model;
using detrain::test::randomize_batchnorm;

namespace {

YoloModel build(const std::string& arch, const std::string& scale = "n", int64_t nc = 0) {
  BuildOptions options;
  options.arch = arch;
  options.scale = scale;
  options.nc = nc;
  return YoloModel(options);
}

std::vector<int64_t> dims(const torch::Tensor& t) { return t.sizes().vec(); }

void check_shapes(const std::string& arch, int64_t batch, int64_t height, int64_t width) {
  auto model = build(arch);
  const auto& a = model->arch();
  const int64_t nk = a.kpt_shape[0] * a.kpt_shape[1];
  const bool pose26 = model->head()->options().kind == HeadKind::kPose26;
  int64_t anchors = 0;
  for (const auto& [h, w] : geometry::level_sizes(height, width, a.strides)) anchors += h * w;
  INFO(arch << " batch " << batch << " at " << height << "x" << width);
  const auto images = torch::rand({batch, 3, height, width});
  torch::NoGradGuard no_grad;
  model->train();
  const auto train = model->forward_train(images);
  REQUIRE(train.feats.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(train.feats[i].size(0) == batch);
    CHECK(train.feats[i].size(2) * a.strides[i] == height);
    CHECK(train.feats[i].size(3) * a.strides[i] == width);
  }
  for (const auto* branch : {&train.one2many, &train.one2one}) {
    if (branch == &train.one2one && !a.end2end) {
      CHECK_FALSE(branch->defined());
      continue;
    }
    CHECK(dims(branch->boxes) == std::vector<int64_t>{batch, 4 * a.reg_max, anchors});
    CHECK(dims(branch->scores) == std::vector<int64_t>{batch, a.nc, anchors});
    if (nk) CHECK(dims(branch->kpts) == std::vector<int64_t>{batch, nk, anchors});
    CHECK(branch->kpts_sigma.defined() == pose26);
    if (pose26)
      CHECK(dims(branch->kpts_sigma) == std::vector<int64_t>{batch, a.kpt_shape[0] * 2, anchors});
  }
  model->eval();
  const auto eval = model->forward_eval(images, 300);
  CHECK(dims(eval.decoded) == std::vector<int64_t>{batch, 4 + a.nc + nk, anchors});
  CHECK_FALSE(eval.raw.one2many.kpts_sigma.defined());  // sigma heads only run in training
  if (a.end2end) {
    const int64_t k = std::min<int64_t>(300, anchors);
    CHECK(dims(eval.detections) == std::vector<int64_t>{batch, k, 6 + nk});
    CHECK(dims(eval.topk_anchor_index) == std::vector<int64_t>{batch, k});
  } else {
    CHECK_FALSE(eval.detections.defined());
  }
}

using Published = std::vector<std::tuple<const char*, const char*, double>>;

// Training-graph GFLOPs at 640 px, nc 80, against reference-yolo.md 1.5. The published figures
// are rounded to 0.1 and include BN (~1%); 2% is the bar.
void check_published_gflops(const Published& published) {
  for (const auto& [arch, scale, expected] : published) {
    INFO(arch << " " << scale);
    auto model = build(arch, scale, 80);
    CHECK(gflops(*model, 640) == Approx(expected).epsilon(0.02));
  }
}

}  // namespace

TEST_CASE("train and eval outputs have the documented shapes at batch 1 and 4", "[unit][model]") {
  for (const char* arch : {"models/yolo26.yaml", "models/yolo26-pose.yaml", "models/yolo11.yaml",
                           "models/yolo11-pose.yaml"}) {
    check_shapes(arch, 1, 64, 96);
    check_shapes(arch, 4, 64, 64);
  }
}

TEST_CASE("yolo26n at 640 px has strides 8 16 32 and 8400 anchors", "[unit][model]") {
  auto model = build("models/yolo26.yaml");
  CHECK(model->strides() == std::vector<int64_t>{8, 16, 32});
  model->eval();
  torch::NoGradGuard no_grad;
  const auto out = model->forward_eval(torch::rand({1, 3, 640, 640}), 300);
  CHECK(dims(out.raw.feats[0]) == std::vector<int64_t>{1, 64, 80, 80});
  CHECK(dims(out.raw.feats[1]) == std::vector<int64_t>{1, 128, 40, 40});
  CHECK(dims(out.raw.feats[2]) == std::vector<int64_t>{1, 256, 20, 20});
  CHECK(dims(out.decoded) == std::vector<int64_t>{1, 84, 8400});
  CHECK(dims(out.detections) == std::vector<int64_t>{1, 300, 6});
}

TEST_CASE("end-to-end detections are the top-k of the decoded tensor", "[unit][model]") {
  for (const char* arch : {"models/yolo26.yaml", "models/yolo26-pose.yaml"}) {
    INFO(arch);
    auto model = build(arch, "n", 3);
    randomize_batchnorm(*model, 7);
    model->eval();
    torch::NoGradGuard no_grad;
    const auto out = model->forward_eval(torch::rand({2, 3, 64, 64}), 20);
    const int64_t nc = 3, nk = model->arch().kpt_shape[0] * model->arch().kpt_shape[1];
    REQUIRE(out.detections.size(1) == 20);
    for (int64_t b = 0; b < 2; ++b) {
      const auto rows = out.detections[b];  // [20, 6 + nk]
      // Scores descend, classes are whole numbers in range, and each row is the decoded column
      // of its anchor and class.
      CHECK(torch::all(rows.slice(0, 0, -1).select(1, 4) >= rows.slice(0, 1).select(1, 4))
                .item<bool>());
      for (int64_t r = 0; r < 20; ++r) {
        const int64_t anchor = out.topk_anchor_index[b][r].item<int64_t>();
        const double cls = rows[r][5].item<double>();
        REQUIRE(cls == std::floor(cls));
        REQUIRE(cls >= 0);
        REQUIRE(cls < nc);
        const auto column = out.decoded[b].select(1, anchor);  // [4 + nc + nk]
        CHECK(torch::equal(rows[r].slice(0, 0, 4), column.slice(0, 0, 4)));
        CHECK(rows[r][4].item<float>() == column[4 + static_cast<int64_t>(cls)].item<float>());
        if (nk) CHECK(torch::equal(rows[r].slice(0, 6), column.slice(0, 4 + nc)));
      }
      // Nothing outside the top-k scores higher than the last row.
      const auto scores = out.decoded[b].slice(0, 4, 4 + nc);  // [nc, A]
      CHECK(std::get<0>(scores.flatten().topk(20))[19].item<float>() == rows[19][4].item<float>());
    }
  }
}

TEST_CASE("fused inference equals unfused within 1e-4 relative", "[unit][model]") {
  for (const char* arch : {"models/yolo26.yaml", "models/yolo26-pose.yaml", "models/yolo11.yaml",
                           "models/yolo11-pose.yaml"}) {
    INFO(arch);
    auto model = build(arch);
    randomize_batchnorm(*model, 11);
    model->eval();
    torch::NoGradGuard no_grad;
    torch::manual_seed(5);
    const auto images = torch::rand({2, 3, 96, 64});
    const auto before = model->forward_eval(images, 300);
    const int64_t params_before = model_totals(*model).parameters;
    model->fuse();
    CHECK(model->fused());
    CHECK(model_totals(*model).parameters < params_before);
    const auto after = model->forward_eval(images, 300);
    // Folding BN reorders fp32 arithmetic (scale applied to weights instead of outputs).
    const auto report = test::check_close("decoded", after.decoded, before.decoded, 1e-4);
    INFO(report.details);
    CHECK(report.ok);
    if (model->arch().end2end) {
      // The same picks, except that two candidates whose scores tie within the tolerance may
      // trade places (the reordered arithmetic decides a near-tie either way): each pick of
      // the fused model is a pick of the unfused one with a score within 1e-4 relative. A pick
      // is an (anchor, class) pair: the top-k runs over anchors x classes, so one anchor can be
      // picked for several classes.
      const auto scores_before = before.detections.select(2, 4);  // [B, K]
      const auto classes = after.detections.select(2, 5);
      const auto classes_before = before.detections.select(2, 5);  // [B, K]
      const auto picks = after.topk_anchor_index, picks_before = before.topk_anchor_index;
      int64_t moved = 0;
      for (int64_t b = 0; b < picks.size(0); ++b)
        for (int64_t r = 0; r < picks.size(1); ++r) {
          if (picks[b][r].item<int64_t>() == picks_before[b][r].item<int64_t>() &&
              classes[b][r].item<float>() == classes_before[b][r].item<float>())
            continue;
          ++moved;
          const auto same =
              (picks_before[b].eq(picks[b][r]) & classes_before[b].eq(classes[b][r])).nonzero();
          REQUIRE(same.size(0) == 1);  // picked by both
          const float a = scores_before[b][same[0][0]].item<float>();
          const float e = scores_before[b][r].item<float>();
          CHECK(std::abs(a - e) <= 1e-4f * std::abs(e) + 1e-6f);
        }
      INFO(moved << " picks traded places");
      CHECK(moved <= 4);
      CHECK_FALSE(after.raw.one2many.defined());  // the one-to-many towers are gone
    }
    CHECK_THROWS_WITH(model->forward_train(images), Catch::Contains("inference-only"));
    for (const auto& item : model->named_parameters()) {
      CHECK(item.key().find(".bn.") == std::string::npos);
      CHECK(item.key().find("sigma") == std::string::npos);
      CHECK(item.key().find("flow_model") == std::string::npos);
    }
  }
}

TEST_CASE("fused yolo26 models match the published inference sizes", "[unit][model]") {
  // Docs tables (reference-yolo.md 1.5): fused, one-to-one head only, params in millions
  // (rounded to 0.1) and GFLOPs; detect nc 80, pose nc 1. GFLOPs within 2%: BN is folded, and
  // the docs' figures are rounded to 0.1.
  const std::vector<std::tuple<const char*, const char*, int64_t, double, double>> docs{
      {"models/yolo26.yaml", "n", 80, 2.4, 5.4},
      {"models/yolo26.yaml", "s", 80, 9.5, 20.7},
      {"models/yolo26-pose.yaml", "n", 1, 2.9, 7.5},
      {"models/yolo26-pose.yaml", "s", 1, 10.4, 23.9}};
  for (const auto& [arch, scale, nc, params_m, published_gflops] : docs) {
    INFO(arch << " " << scale);
    auto model = build(arch, scale, nc);
    model->fuse();
    CHECK(std::round(model_totals(*model).parameters / 1e5) / 10 == Approx(params_m));
    CHECK(gflops(*model, 640) == Approx(published_gflops).epsilon(0.02));
  }
}

TEST_CASE("backward reaches every trainable parameter except the detached ones", "[unit][model]") {
  for (const char* arch : {"models/yolo26-pose.yaml", "models/yolo11.yaml"}) {
    INFO(arch);
    auto model = build(arch);
    model->train();
    const auto images = torch::rand({2, 3, 64, 64});
    auto out = model->forward_train(images);
    auto total = [](const BranchOutput& b) {
      auto sum = b.boxes.sum() + b.scores.sum();
      if (b.kpts.defined()) sum = sum + b.kpts.sum();
      if (b.kpts_sigma.defined()) sum = sum + b.kpts_sigma.sum();
      return sum;
    };
    auto loss = total(out.one2many);
    if (out.one2one.defined()) loss = loss + total(out.one2one);
    loss.backward();
    for (const auto& info : model->param_infos()) {
      INFO(info.name);
      const bool flow = info.name.find("flow_model") != std::string::npos;  // loss-only
      if (!info.trainable || flow)
        CHECK_FALSE(info.param.grad().defined());
      else
        CHECK(info.param.grad().defined());
    }
    if (!model->arch().end2end) continue;
    // Only the one-to-one loss: nothing reaches the backbone, the neck or the one-to-many heads.
    model->zero_grad();
    for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
    out = model->forward_train(images);
    total(out.one2one).backward();
    for (const auto& info : model->param_infos()) {
      INFO(info.name);
      const bool one2one = info.name.rfind("model.23.one2one_", 0) == 0;
      CHECK(info.param.grad().defined() == one2one);
    }
  }
}

TEST_CASE("GFLOPs at 640 are within 2% of the published figures", "[unit][model]") {
  // reference-yolo.md 1.5: training graph at 640 px, nc 80 (n and s here; [slow] covers m/l/x).
  const Published published{
      {"models/yolo26.yaml", "n", 6.1},       {"models/yolo26.yaml", "s", 22.8},
      {"models/yolo26-pose.yaml", "n", 10.7}, {"models/yolo26-pose.yaml", "s", 29.6},
      {"models/yolo11.yaml", "n", 6.6},       {"models/yolo11.yaml", "s", 21.7},
      {"models/yolo11-pose.yaml", "n", 7.7},  {"models/yolo11-pose.yaml", "s", 23.5}};
  check_published_gflops(published);
}

TEST_CASE("GFLOPs of the m l x scales are within 2% of the published figures", "[slow][model]") {
  const Published published{
      {"models/yolo26.yaml", "m", 75.4},       {"models/yolo26.yaml", "l", 93.8},
      {"models/yolo26.yaml", "x", 209.5},      {"models/yolo26-pose.yaml", "m", 85.9},
      {"models/yolo26-pose.yaml", "l", 104.3}, {"models/yolo26-pose.yaml", "x", 226.3},
      {"models/yolo11.yaml", "m", 68.5},       {"models/yolo11.yaml", "l", 87.6},
      {"models/yolo11.yaml", "x", 196.0},      {"models/yolo11-pose.yaml", "m", 72.3},
      {"models/yolo11-pose.yaml", "l", 91.4},  {"models/yolo11-pose.yaml", "x", 204.3}};
  check_published_gflops(published);
}

TEST_CASE("GFLOPs counting leaves BN statistics and the training mode alone", "[unit][model]") {
  auto model = build("models/yolo26.yaml");
  model->train();
  const auto before = model->named_buffers()["model.0.bn.running_mean"].clone();
  const double at_640 = gflops(*model, 640);
  CHECK(model->is_training());
  CHECK(torch::equal(before, model->named_buffers()["model.0.bn.running_mean"]));
  // Convolutions scale with the area, attention with its square: 320 px is a bit under 1/4.
  const double at_320 = gflops(*model, 320);
  CHECK(at_320 < at_640 / 4);
  CHECK(at_320 > at_640 / 4 * 0.98);
}

TEST_CASE("the class-agnostic end-to-end top-k takes each anchor's best class once",
          "[unit][model]") {
  torch::manual_seed(11);  // weights and images: the same anchors on every run
  auto model = build("models/yolo26.yaml", "n", 3);
  randomize_batchnorm(*model, 7);
  model->eval();
  torch::NoGradGuard no_grad;
  const auto images = torch::rand({2, 3, 64, 64});
  const auto out = model->forward_eval(images, 20, /*one2one=*/true, /*agnostic=*/true);
  const auto aware = model->forward_eval(images, 20, /*one2one=*/true, /*agnostic=*/false);
  REQUIRE(out.detections.size(1) == 20);
  for (int64_t b = 0; b < 2; ++b) {
    const auto scores = out.decoded[b].slice(0, 4, 7);  // [nc, A]
    const auto [best, best_class] = scores.max(0);      // [A]
    const auto [want, want_anchor] = best.topk(20);
    // The 20 anchors whose best class scores highest, in that order, each with that class.
    CHECK(torch::equal(out.topk_anchor_index[b], want_anchor));
    CHECK(torch::equal(out.detections[b].select(1, 4), want));
    CHECK(torch::equal(out.detections[b].select(1, 5),
                       best_class.index_select(0, want_anchor).to(torch::kFloat)));
  }
  // The class-aware top-k of this model gives some anchor two rows, so the two differ.
  bool repeated = false;
  for (int64_t b = 0; b < 2; ++b)
    repeated = repeated || std::get<0>(at::_unique(aware.topk_anchor_index[b])).numel() < 20;
  CHECK(repeated);
}
