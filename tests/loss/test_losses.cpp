// Loss terms by hand (src/loss): DFL at bin edges, OKS with unlabelled keypoints, RLE through
// an identity flow, target padding, the end-to-end weight schedule and its resume behaviour,
// and robustness: an empty batch, 1000 boxes and a sub-pixel box give finite losses and grads.
#include <catch2/catch.hpp>
#include <cmath>

#include "loss/criterion.h"
#include "loss/detection_loss.h"
#include "loss/end2end_loss.h"
#include "loss/keypoint_loss.h"
#include "loss/targets.h"

using namespace detrain;
using namespace detrain::loss;
using Catch::Detail::Approx;

namespace {

// fp32 sums of a handful of terms against double hand values.
constexpr double kTol = 1e-5;

// Synthetic raw outputs of one branch at 640 px (8400 anchors), leaves that take gradients.
struct Synthetic {
  model::BranchOutput branch;
  std::vector<torch::Tensor> leaves;
};

// tiny: boxes of a fraction of a pixel (reg_max 1: distances under 0.05 cells; DFL: the
// first bin dominates), so that sub-pixel gts get foreground.
Synthetic synthetic_branch(const model::HeadOptions& head, int64_t batch, uint64_t seed,
                           bool tiny) {
  auto gen = at::detail::createCPUGenerator(seed);
  const int64_t a = 8400;
  Synthetic s;
  auto leaf = [&](torch::Tensor t) {
    t.requires_grad_(true);
    s.leaves.push_back(t);
    return t;
  };
  auto boxes = head.reg_max > 1 ? torch::randn({batch, 4 * head.reg_max, a}, gen)
                                : torch::rand({batch, 4, a}, gen) * (tiny ? 0.05 : 3.0);
  if (tiny && head.reg_max > 1) boxes.view({batch, 4, head.reg_max, a}).select(2, 0).add_(10.0);
  s.branch.boxes = leaf(boxes);
  s.branch.scores = leaf(torch::randn({batch, head.nc, a}, gen) - 4);
  if (head.pose()) {
    s.branch.kpts = leaf(torch::randn({batch, head.num_keypoint_values(), a}, gen));
    if (head.kind == model::HeadKind::kPose26)
      s.branch.kpts_sigma = leaf(torch::randn({batch, head.kpt_shape[0] * 2, a}, gen));
  }
  return s;
}

model::TrainOutput synthetic_output(const model::HeadOptions& head, int64_t batch,
                                    std::vector<torch::Tensor>& leaves, bool tiny) {
  model::TrainOutput out;
  auto one2many = synthetic_branch(head, batch, 1, tiny);
  out.one2many = one2many.branch;
  leaves = one2many.leaves;
  if (head.end2end) {
    auto one2one = synthetic_branch(head, batch, 2, tiny);
    out.one2one = one2one.branch;
    leaves.insert(leaves.end(), one2one.leaves.begin(), one2one.leaves.end());
  }
  for (int64_t s : {8, 16, 32}) out.feats.push_back(torch::zeros({batch, 1, 640 / s, 640 / s}));
  return out;
}

model::HeadOptions head_options(model::HeadKind kind, int64_t reg_max, bool end2end) {
  model::HeadOptions o;
  o.kind = kind;
  o.nc = kind == model::HeadKind::kDetect ? 3 : 1;
  o.reg_max = reg_max;
  o.end2end = end2end;
  o.strides = {8, 16, 32};
  o.channels = {1, 1, 1};
  return o;
}

// `n` objects in image 0 with normalised xywh boxes `boxes` [n, 4] and random keypoints.
Targets make_targets(const torch::Tensor& boxes, int64_t num_keypoints, uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  const auto n = boxes.size(0);
  Targets t;
  t.batch_idx = torch::zeros({n}, torch::kLong);
  t.cls = torch::zeros({n}, torch::kLong);
  t.boxes_xywhn = boxes;
  const auto xy =
      boxes.narrow(1, 0, 2).unsqueeze(1) +
      (torch::rand({n, num_keypoints, 2}, gen) - 0.5) * boxes.narrow(1, 2, 2).unsqueeze(1);
  const auto v = torch::randint(0, 3, {n, num_keypoints, 1}, gen).to(torch::kFloat);
  t.keypoints = torch::cat({xy, v}, -1);
  return t;
}

void check_finite(const LossResult& r, const std::vector<torch::Tensor>& leaves,
                  model::RealNVP flow) {
  INFO("items " << r.items);
  CHECK(std::isfinite(r.total.item<double>()));
  CHECK(torch::isfinite(r.items).all().item<bool>());
  r.total.backward();
  for (const auto& leaf : leaves) {
    if (!leaf.grad().defined()) continue;  // e.g. keypoints without foreground
    CHECK(torch::isfinite(leaf.grad()).all().item<bool>());
  }
  if (!flow.is_empty())
    for (const auto& p : flow->parameters())
      if (p.grad().defined()) CHECK(torch::isfinite(p.grad()).all().item<bool>());
}

// An empty batch, 1000 boxes in one 640 px image and a 0.5 x 0.4 px box: finite items, total
// and gradients (into the raw outputs and the RLE flow); no foreground leaves box and dfl at 0.
void check_robust(const model::HeadOptions& head) {
  auto gen = at::detail::createCPUGenerator(11);
  const auto dense_centre = torch::rand({1000, 2}, gen) * 0.9 + 0.05;
  const auto dense_size = torch::rand({1000, 2}, gen) * 0.1 + 0.002;
  const auto dense = torch::cat({dense_centre, dense_size}, 1);  // [1000, 4]
  // 0.5 x 0.4 px centred on the stride-8 anchor (196, 388) px.
  const auto sub_pixel =
      torch::tensor({196.f / 640, 388.f / 640, 0.5f / 640, 0.4f / 640}).view({1, 4});
  const auto flow = head.kind == model::HeadKind::kPose26 ? model::RealNVP() : nullptr;
  auto criterion = make_criterion(head, config::LossOptions{}, {}, flow);
  for (const auto& [label, boxes] :
       {std::pair<const char*, torch::Tensor>{"empty", torch::zeros({0, 4})},
        {"1000 boxes", dense},
        {"sub-pixel box", sub_pixel}}) {
    INFO(label);
    std::vector<torch::Tensor> leaves;
    const auto out = synthetic_output(head, 1, leaves, boxes.size(0) == 1);
    const auto r = (*criterion)(out, make_targets(boxes, 17, 3), {640, 640});
    if (boxes.size(0) == 0) {
      CHECK(r.items[0].item<double>() == 0);
      CHECK(r.items[r.names.size() == 3 ? 2 : 4].item<double>() == 0);
      CHECK(r.items[r.names.size() == 3 ? 1 : 3].item<double>() > 0);  // cls pushes all down
    } else if (head.kind != model::HeadKind::kPose26 || boxes.size(0) > 1) {
      CHECK(r.branches[0].fg_mask.any().item<bool>());
    }
    // (YOLO26 pose assigns by keypoint OKS: for a 0.2 px^2 box every OKS underflows to 0, so all
    // metrics tie at zero and whether a candidate is picked is top-k's tie order, in the
    // reference as here; only finiteness is required then.)
    check_finite(r, leaves, flow);
  }
}

}  // namespace

TEST_CASE("DFL targets at bin edges weight the two neighbouring bins", "[unit][loss]") {
  // Logits l_j = 0.1 j: CE(k) = LSE - 0.1 k, and wl * left + wr * right = t, so the loss of a
  // side is LSE - 0.1 * clamp(t, 0, 14.99) whatever bin the target falls in.
  const int64_t r = 16;
  const auto logits = (torch::arange(r, torch::kFloat) * 0.1).repeat({4, 1});  // [4, 16]
  double lse = 0;
  for (int j = 0; j < r; ++j) lse += std::exp(0.1 * j);
  lse = std::log(lse);
  const std::vector<std::pair<float, double>> cases = {{0.f, 0.0},      {3.f, 3.0},    {3.5f, 3.5},
                                                       {14.99f, 14.99}, {20.f, 14.99}, {-1.f, 0.0}};
  for (const auto& [t, clamped] : cases) {
    const auto loss = dfl_loss(logits, torch::full({1, 4}, t), r);  // [1, 1]
    INFO("target " << t);
    CHECK(loss.item<double>() == Approx(lse - 0.1 * clamped).margin(kTol));
  }
  // At an integer target all weight sits on one bin: the right bin's logit gets no gradient.
  auto pred = logits.clone().requires_grad_(true);
  dfl_loss(pred, torch::full({1, 4}, 3.f), r).sum().backward();
  // d CE(3) / d l_4 = softmax_4 > 0 only through the normaliser, identical for every non-target
  // bin; the target bin has softmax_3 - 1 < 0.
  CHECK(pred.grad()[0][3].item<double>() < 0);
  CHECK(pred.grad()[0][4].item<double>() > 0);
}

TEST_CASE("OKS location loss ignores unlabelled keypoints", "[unit][loss]") {
  // One object, 3 keypoints; keypoint 1 unlabelled with a large error. d = (1, 100, 4),
  // area 2, sigmas (0.5, 0.5, 0.25) -> e = d / ((2 sigma)^2 * area * 2) = (0.25, -, 4);
  // factor K / #labelled = 3 / 2; loss = mean over 3 of factor * (1 - exp(-e)).
  const auto gt = torch::zeros({1, 3, 3});
  const auto pred = torch::tensor({1.f, 0.f, 0.f, 10.f, 0.f, 0.f, 0.f, 2.f, 0.f}).view({1, 3, 3});
  const auto labelled = torch::tensor({true, false, true}).view({1, 3});
  const auto sigmas = torch::tensor({0.5f, 0.5f, 0.25f});
  const auto area = torch::full({1, 1}, 2.f);
  const double expected = 1.5 * ((1 - std::exp(-0.25)) + (1 - std::exp(-4.0))) / 3;
  CHECK(oks_location_loss(pred, gt, labelled, area, sigmas).item<double>() ==
        Approx(expected).margin(kTol));
  // Nothing labelled: zero, not NaN (the 1e-9 in K / (#labelled + 1e-9) meets a zero mask).
  const auto none = torch::zeros({1, 3}, torch::kBool);
  CHECK(oks_location_loss(pred, gt, none, area, sigmas).item<double>() == 0.0);
}

TEST_CASE("RLE term by hand through an identity flow", "[unit][loss]") {
  // With zero coupling weights the flow is the identity and log phi(e) is the standard normal
  // log density -log(2 pi) - |e|^2 / 2. Sigma logits 0 -> sigma 0.5; error (0.5, -1) / 0.5 =
  // (1, -2). Per coordinate log sigma - log phi + log 2 sigma + |e|; joint 9 (a wrist) weighs
  // 1.5; the other 16 keypoints are unlabelled and ignored; one row.
  model::RealNVP flow;
  {
    torch::NoGradGuard no_grad;
    for (auto& p : flow->parameters()) p.zero_();
  }
  auto pred = torch::zeros({1, 17, 5});  // x, y, visibility, sigma x, sigma y
  pred[0][9][0] = 0.5f;
  pred[0][9][1] = -1.f;
  const auto gt = torch::zeros({1, 17, 3});
  auto labelled = torch::zeros({1, 17}, torch::kBool);
  labelled[0][9] = true;
  const double log_phi = -std::log(2 * M_PI) - 0.5 * (1 + 4);
  const double per_row = 2 * std::log(0.5) - 2 * log_phi + 2 * std::log(1.0) + 3;
  const auto loss = rle_loss(pred, gt, labelled, rle_joint_weights(17), *flow);
  CHECK(loss.item<double>() == Approx(1.5 * per_row).margin(1e-4));
}

TEST_CASE("targets are padded per image in input pixels", "[unit][loss]") {
  // Images 0, 0, 2 of a batch of 3 at 100 x 200 (h x w): two rows per image, image 1 empty.
  Targets t;
  t.batch_idx = torch::tensor({0, 0, 2}, torch::kLong);
  t.cls = torch::tensor({4, 5, 6}, torch::kLong);
  t.boxes_xywhn =
      torch::tensor({0.5f, 0.5f, 0.5f, 0.5f, 0.25f, 0.25f, 0.1f, 0.2f, 0.5f, 0.5f, 1.f, 1.f})
          .view({3, 4});
  const auto padded = pad_targets(t, 3, {100, 200}, torch::zeros({1}));
  REQUIRE(padded.boxes_xyxy_px.sizes() == torch::IntArrayRef({3, 2, 4}));
  // (0.5, 0.5, 0.5, 0.5) -> centre (100, 50), size (100, 50) -> [50, 25, 150, 75].
  CHECK(torch::equal(padded.boxes_xyxy_px[0][0], torch::tensor({50.f, 25.f, 150.f, 75.f})));
  CHECK(torch::equal(padded.boxes_xyxy_px[2][0], torch::tensor({0.f, 0.f, 200.f, 100.f})));
  CHECK(torch::equal(padded.mask.view({-1}), torch::tensor({1.f, 1.f, 0.f, 0.f, 1.f, 0.f})));
  CHECK(padded.labels[2][0][0].item<double>() == 6);
}

TEST_CASE("end-to-end weights follow the reference schedule and survive a resume", "[unit][loss]") {
  // Epoch 0: exactly the start value and 1 - 0.8 in float64 (0.19999999999999996).
  const auto first = end2end_weights(0, 100);
  CHECK(first.o2m == 0.8);
  CHECK(first.o2o == 1.0 - 0.8);
  // Epoch e >= 1: max(1 - e / 99, 0) * 0.7 + 0.1 (hand formula, README section 3.2).
  CHECK(end2end_weights(1, 100).o2m == Approx((1 - 1.0 / 99) * (0.8 - 0.1) + 0.1));
  CHECK(end2end_weights(99, 100).o2m == Approx(0.1));
  CHECK(end2end_weights(150, 100).o2m == Approx(0.1));
  CHECK(end2end_weights(3, 1).o2m == Approx(0.1));  // a one-epoch run does not divide by 0
  // A criterion stepped through every epoch and a fresh one set to the resume epoch agree.
  const auto head = head_options(model::HeadKind::kDetect, 1, true);
  auto stepped = make_criterion(head, config::LossOptions{});
  for (int64_t e = 0; e <= 37; ++e) stepped->set_epoch(e, 60);
  auto resumed = make_criterion(head, config::LossOptions{});
  resumed->set_epoch(37, 60);
  CHECK(stepped->weights().o2m == resumed->weights().o2m);
  CHECK(stepped->weights().o2o == resumed->weights().o2o);
}

TEST_CASE("item names follow the head", "[unit][loss]") {
  using V = std::vector<std::string>;
  CHECK(make_criterion(head_options(model::HeadKind::kDetect, 16, false), {})->names() ==
        V{"box", "cls", "dfl"});
  CHECK(make_criterion(head_options(model::HeadKind::kDetect, 1, true), {})->names() ==
        V{"box", "cls", "l1"});
  CHECK(make_criterion(head_options(model::HeadKind::kPose, 16, false), {})->names() ==
        V{"box", "pose", "kobj", "cls", "dfl"});
  CHECK(make_criterion(head_options(model::HeadKind::kPose26, 1, true), {}, {}, model::RealNVP())
            ->names() == V{"box", "pose", "kobj", "cls", "l1", "rle"});
}

TEST_CASE("YOLO26 detection loss stays finite on empty, dense and sub-pixel targets",
          "[unit][loss]") {
  check_robust(head_options(model::HeadKind::kDetect, 1, true));
}

TEST_CASE("YOLO11 detection loss stays finite on empty, dense and sub-pixel targets",
          "[unit][loss]") {
  check_robust(head_options(model::HeadKind::kDetect, 16, false));
}

TEST_CASE("YOLO26 pose loss stays finite on empty, dense and sub-pixel targets", "[unit][loss]") {
  check_robust(head_options(model::HeadKind::kPose26, 1, true));
}

TEST_CASE("YOLO11 pose loss stays finite on empty, dense and sub-pixel targets", "[unit][loss]") {
  check_robust(head_options(model::HeadKind::kPose, 16, false));
}

TEST_CASE("criterion computes in float32 whatever the output dtype", "[unit][loss]") {
  // bfloat16 raw outputs (as under autocast) give exactly the float32 result of the same
  // values, and gradients reach the bfloat16 leaves.
  const auto head = head_options(model::HeadKind::kDetect, 1, true);
  std::vector<torch::Tensor> leaves;
  auto out = synthetic_output(head, 1, leaves, false);
  auto bf16 = out;
  std::vector<torch::Tensor> bf16_leaves;
  for (auto* pair : {&bf16.one2many, &bf16.one2one}) {
    pair->boxes = pair->boxes.detach().to(torch::kBFloat16).requires_grad_(true);
    pair->scores = pair->scores.detach().to(torch::kBFloat16).requires_grad_(true);
    bf16_leaves.push_back(pair->boxes);
    bf16_leaves.push_back(pair->scores);
  }
  for (auto& f : bf16.feats) f = f.to(torch::kBFloat16);
  auto rounded = bf16;
  for (auto* pair : {&rounded.one2many, &rounded.one2one}) {
    pair->boxes = pair->boxes.detach().to(torch::kFloat);
    pair->scores = pair->scores.detach().to(torch::kFloat);
  }
  for (auto& f : rounded.feats) f = f.to(torch::kFloat);
  const auto boxes = torch::tensor({0.3f, 0.4f, 0.2f, 0.3f, 0.7f, 0.6f, 0.1f, 0.05f}).view({2, 4});
  const auto targets = make_targets(boxes, 17, 5);
  auto criterion = make_criterion(head, config::LossOptions{});
  const auto from_bf16 = (*criterion)(bf16, targets, {640, 640});
  const auto from_f32 = (*criterion)(rounded, targets, {640, 640});
  CHECK(from_bf16.total.scalar_type() == torch::kFloat);
  CHECK(torch::equal(from_bf16.items, from_f32.items));
  from_bf16.total.backward();
  for (const auto& leaf : bf16_leaves) {
    REQUIRE(leaf.grad().defined());
    CHECK(leaf.grad().scalar_type() == torch::kBFloat16);
    CHECK(torch::isfinite(leaf.grad()).all().item<bool>());
  }
}
