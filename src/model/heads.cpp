// Detect / Pose / Pose26 heads; see heads.h. Registration order equals the reference's module
// order (cv2, cv3, dfl, one2one_cv2, one2one_cv3, cv4, one2one_cv4, flow_model, cv4_kpts,
// cv4_sigma, one2one_cv4_kpts, one2one_cv4_sigma) so parameters enumerate in its order.
#include "model/heads.h"

#include <cmath>
#include <numeric>

#include "geometry/anchors.h"
#include "geometry/box_ops.h"

namespace detrain::model {

namespace {

ConvOptions kernel(int64_t k, int64_t groups = 1) {
  ConvOptions o{k};
  o.g = groups;
  return o;
}

// A depthwise-style Conv (groups = gcd(c1, c2)), the reference's DWConv.
Conv dw_conv(int64_t c1, int64_t c2, int64_t k) {
  return Conv(c1, c2, kernel(k, std::gcd(c1, c2)));
}

Chain mlp(bool tanh) {
  Chain chain(torch::nn::Linear(2, 64), torch::nn::SiLU(), torch::nn::Linear(64, 64),
              torch::nn::SiLU(), torch::nn::Linear(64, 2));
  if (tanh) chain->push_back(torch::nn::Tanh());
  return chain;
}

PlainConvImpl& last_conv(const torch::nn::ModuleList& towers, size_t level) {
  auto& chain = *towers->ptr<ChainImpl>(level);
  return chain.at(chain.size() - 1).get<PlainConvImpl>();
}

void copy_state(const torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard no_grad;
  auto source = from.named_parameters();
  for (auto& item : to.named_parameters()) item.value().copy_(source[item.key()]);
  auto buffers = from.named_buffers();
  for (auto& item : to.named_buffers()) item.value().copy_(buffers[item.key()]);
}

}  // namespace

// ---- RealNVP ---------------------------------------------------------------------------------

RealNVPImpl::RealNVPImpl() {
  loc = register_buffer("loc", torch::zeros({2}));
  cov = register_buffer("cov", torch::eye(2));
  mask = register_buffer("mask", torch::tensor({0.f, 1.f, 1.f, 0.f}).repeat({3}).view({6, 2}));
  s = register_module("s", torch::nn::ModuleList());
  t = register_module("t", torch::nn::ModuleList());
  for (int64_t i = 0; i < mask.size(0); ++i) {
    s->push_back(mlp(true));
    t->push_back(mlp(false));
  }
  torch::NoGradGuard no_grad;
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* linear = module->as<torch::nn::Linear>())
      torch::nn::init::xavier_uniform_(linear->weight, 0.01);
  }
}

torch::Tensor RealNVPImpl::log_prob(const torch::Tensor& x) {
  auto z = x;                                             // [N, 2]
  auto log_det = torch::zeros({x.size(0)}, x.options());  // [N]
  for (int64_t i = mask.size(0) - 1; i >= 0; --i) {
    const auto keep = mask[i];  // [2]
    const auto z_kept = keep * z;
    const auto scale = s->ptr<ChainImpl>(i)->forward(z_kept) * (1 - keep);  // [N, 2]
    const auto shift = t->ptr<ChainImpl>(i)->forward(z_kept) * (1 - keep);  // [N, 2]
    z = (1 - keep) * (z - shift) * torch::exp(-scale) + z_kept;
    log_det = log_det - scale.sum(1);
  }
  // Multivariate normal log density with mean loc and covariance cov (Cholesky form).
  const auto chol = torch::linalg_cholesky(cov);                                   // [2, 2]
  const auto diff = (z - loc).unsqueeze(-1);                                       // [N, 2, 1]
  const auto white = torch::linalg_solve_triangular(chol, diff, /*upper=*/false);  // [N, 2, 1]
  const auto mahalanobis = white.pow(2).sum({-2, -1});                             // [N]
  const auto half_log_det = chol.diagonal().log().sum();
  return -0.5 * (2.0 * std::log(2.0 * M_PI) + mahalanobis) - half_log_det + log_det;
}

// ---- Head ------------------------------------------------------------------------------------

HeadImpl::HeadImpl(HeadOptions options) : options_(std::move(options)) {
  const auto& o = options_;
  TORCH_CHECK(!o.channels.empty() && o.channels.size() == o.strides.size(),
              "head needs one stride per input level");
  TORCH_CHECK(o.kpt_shape[1] == 2 || o.kpt_shape[1] == 3, "kpt_shape[1] must be 2 or 3");
  make_towers(one2many_);
  one2many_.box = register_module("cv2", one2many_.box);
  one2many_.cls = register_module("cv3", one2many_.cls);
  if (o.reg_max > 1)
    dfl_ = register_module("dfl", DFL(o.reg_max));
  else
    register_module("dfl", torch::nn::Identity());
  if (o.end2end) {
    make_towers(one2one_);
    one2one_.box = register_module("one2one_cv2", one2one_.box);
    one2one_.cls = register_module("one2one_cv3", one2one_.cls);
  }
  if (o.pose()) {
    one2many_.pose = register_module("cv4", one2many_.pose);
    if (o.end2end) one2one_.pose = register_module("one2one_cv4", one2one_.pose);
  }
  if (o.kind == HeadKind::kPose26) {
    flow_model_ = register_module("flow_model", RealNVP());
    one2many_.kpts = register_module("cv4_kpts", one2many_.kpts);
    one2many_.sigma = register_module("cv4_sigma", one2many_.sigma);
    if (o.end2end) {
      one2one_.kpts = register_module("one2one_cv4_kpts", one2one_.kpts);
      one2one_.sigma = register_module("one2one_cv4_sigma", one2one_.sigma);
    }
  }
  // The one-to-one branch starts as an exact copy of the one-to-many branch.
  if (o.end2end) {
    for (auto [from, to] :
         {std::pair{one2many_.box, one2one_.box}, std::pair{one2many_.cls, one2one_.cls},
          std::pair{one2many_.pose, one2one_.pose}, std::pair{one2many_.kpts, one2one_.kpts},
          std::pair{one2many_.sigma, one2one_.sigma}}) {
      if (from) copy_state(*from, *to);
    }
  }
  bias_init();
}

void HeadImpl::make_towers(Branch& branch) {
  const auto& o = options_;
  const int64_t ch0 = o.channels[0];
  const int64_t box_width = std::max({int64_t{16}, ch0 / 4, o.reg_max * 4});
  const int64_t cls_width =
      o.cls_width > 0 ? o.cls_width : std::max(ch0, std::min<int64_t>(o.nc, 100));
  branch.box = torch::nn::ModuleList();
  branch.cls = torch::nn::ModuleList();
  for (int64_t c : o.channels) {
    branch.box->push_back(Chain(Conv(c, box_width, kernel(3)),
                                Conv(box_width, box_width, kernel(3)),
                                PlainConv(box_width, 4 * o.reg_max)));
    if (o.legacy) {
      branch.cls->push_back(Chain(Conv(c, cls_width, kernel(3)),
                                  Conv(cls_width, cls_width, kernel(3)),
                                  PlainConv(cls_width, o.nc)));
    } else {
      branch.cls->push_back(
          Chain(Chain(dw_conv(c, c, 3), Conv(c, cls_width)),
                Chain(dw_conv(cls_width, cls_width, 3), Conv(cls_width, cls_width)),
                PlainConv(cls_width, o.nc)));
    }
  }
  if (!o.pose()) return;
  const int64_t nk = o.num_keypoint_values();
  branch.pose = torch::nn::ModuleList();
  if (o.kind == HeadKind::kPose) {
    const int64_t width = std::max(ch0 / 4, nk);
    for (int64_t c : o.channels)
      branch.pose->push_back(
          Chain(Conv(c, width, kernel(3)), Conv(width, width, kernel(3)), PlainConv(width, nk)));
    return;
  }
  const int64_t width = std::max(ch0 / 4, o.kpt_shape[0] * (o.kpt_shape[1] + 2));
  branch.kpts = torch::nn::ModuleList();
  branch.sigma = torch::nn::ModuleList();
  for (int64_t c : o.channels) {
    branch.pose->push_back(Chain(Conv(c, width, kernel(3)), Conv(width, width, kernel(3))));
    branch.kpts->push_back(PlainConv(width, nk));
    branch.sigma->push_back(PlainConv(width, o.kpt_shape[0] * 2));
  }
}

void HeadImpl::bias_init() {
  torch::NoGradGuard no_grad;
  for (const Branch* branch : {&one2many_, &one2one_}) {
    if (!branch->box) continue;
    for (size_t i = 0; i < options_.strides.size(); ++i) {
      last_conv(branch->box, i).bias.fill_(2.0);
      const double cells = std::pow(640.0 / static_cast<double>(options_.strides[i]), 2);
      last_conv(branch->cls, i)
          .bias.slice(0, 0, options_.nc)
          .fill_(std::log(5.0 / static_cast<double>(options_.nc) / cells));
    }
  }
}

BranchOutput HeadImpl::forward_branch(const std::vector<torch::Tensor>& feats, const Branch& branch,
                                      bool with_sigma) {
  const auto& o = options_;
  const int64_t batch = feats[0].size(0);
  const size_t levels = feats.size();
  auto per_level = [&](const torch::nn::ModuleList& towers, int64_t channels,
                       const std::vector<torch::Tensor>& inputs, auto&& apply) {
    std::vector<torch::Tensor> outputs;  // [B, channels, H_i * W_i] each
    for (size_t i = 0; i < levels; ++i)
      outputs.push_back(apply(towers, i, inputs[i]).view({batch, channels, -1}));
    return torch::cat(outputs, 2);
  };
  auto chain = [](const torch::nn::ModuleList& towers, size_t i, const torch::Tensor& x) {
    return towers->ptr<ChainImpl>(i)->forward(x);
  };
  auto plain = [](const torch::nn::ModuleList& towers, size_t i, const torch::Tensor& x) {
    return towers->ptr<PlainConvImpl>(i)->forward(x);
  };
  BranchOutput out;
  out.boxes = per_level(branch.box, 4 * o.reg_max, feats, chain);  // [B, 4R, A]
  out.scores = per_level(branch.cls, o.nc, feats, chain);          // [B, nc, A]
  if (!o.pose()) return out;
  const int64_t nk = o.num_keypoint_values();
  if (o.kind == HeadKind::kPose) {
    out.kpts = per_level(branch.pose, nk, feats, chain);  // [B, K*3, A]
    return out;
  }
  std::vector<torch::Tensor> hidden;  // [B, c4, H_i, W_i] per level, shared by kpts and sigma
  for (size_t i = 0; i < levels; ++i) hidden.push_back(chain(branch.pose, i, feats[i]));
  out.kpts = per_level(branch.kpts, nk, hidden, plain);  // [B, K*3, A]
  if (with_sigma && branch.sigma)
    out.kpts_sigma = per_level(branch.sigma, o.kpt_shape[0] * 2, hidden, plain);  // [B, K*2, A]
  return out;
}

TrainOutput HeadImpl::forward_train(const std::vector<torch::Tensor>& feats) {
  TORCH_CHECK(!fused_, "a fused model has no training branches; build it again to train");
  TORCH_CHECK(feats.size() == options_.channels.size(), "head expects ", options_.channels.size(),
              " feature levels, got ", feats.size());
  TrainOutput out;
  out.feats = feats;
  out.one2many = forward_branch(feats, one2many_, true);
  if (options_.end2end) {
    std::vector<torch::Tensor> detached;  // the one-to-one loss must not reach the backbone
    for (const auto& f : feats) detached.push_back(f.detach());
    out.one2one = forward_branch(detached, one2one_, true);
  }
  return out;
}

EvalOutput HeadImpl::forward_eval(const std::vector<torch::Tensor>& feats, int64_t max_det,
                                  bool one2one, bool agnostic) {
  TORCH_CHECK(feats.size() == options_.channels.size(), "head expects ", options_.channels.size(),
              " feature levels, got ", feats.size());
  EvalOutput out;
  out.raw.feats = feats;
  if (one2many_.box) out.raw.one2many = forward_branch(feats, one2many_, false);
  if (options_.end2end) {
    std::vector<torch::Tensor> detached;
    for (const auto& f : feats) detached.push_back(f.detach());
    out.raw.one2one = forward_branch(detached, one2one_, false);
  }
  const bool top_k = options_.end2end && one2one;
  TORCH_CHECK(top_k || one2many_.box,
              "this fused end-to-end model has no one-to-many branch to run NMS on");
  out.decoded = decode(top_k ? out.raw.one2one : out.raw.one2many, feats, /*xyxy=*/top_k);
  if (top_k) topk(out, max_det, agnostic);
  out.end2end = top_k;
  return out;
}

torch::Tensor HeadImpl::decode(const BranchOutput& branch, const std::vector<torch::Tensor>& feats,
                               bool xyxy) {
  const auto& o = options_;
  // Pixel coordinates are decoded in fp32 at least: bf16 cannot hold 159.5 (a 1280 px grid).
  auto wide = [](const torch::Tensor& t) {
    const auto type = t.scalar_type();
    return type == torch::kBFloat16 || type == torch::kHalf ? t.to(torch::kFloat) : t;
  };
  const auto raw_boxes = wide(branch.boxes);  // [B, 4*reg_max, A]
  std::vector<std::pair<int64_t, int64_t>> sizes;
  for (const auto& f : feats) sizes.emplace_back(f.size(2), f.size(3));
  const auto anchors = geometry::make_anchors(sizes, o.strides, 0.5, raw_boxes.options());
  const auto points = anchors.points.transpose(0, 1);            // [2, A] grid units
  const auto strides = anchors.strides.transpose(0, 1);          // [1, A]
  auto distances = o.reg_max > 1 ? dfl_(raw_boxes) : raw_boxes;  // [B, 4, A]
  auto boxes = geometry::dist2bbox(distances, points.unsqueeze(0), /*xywh=*/!xyxy, 1) *
               strides;  // [B, 4, A] px
  std::vector<torch::Tensor> columns{boxes, wide(branch.scores).sigmoid()};
  if (o.pose()) {
    const int64_t ndim = o.kpt_shape[1];
    auto kpts = wide(branch.kpts).clone();  // [B, K*ndim, A]
    auto x = kpts.slice(1, 0, c10::nullopt, ndim);
    auto y = kpts.slice(1, 1, c10::nullopt, ndim);
    if (ndim == 3) {
      auto visibility = kpts.slice(1, 2, c10::nullopt, ndim);
      visibility.sigmoid_();
    }
    if (o.kind == HeadKind::kPose) {
      x.copy_((x * 2.0 + (points[0] - 0.5)) * strides);
      y.copy_((y * 2.0 + (points[1] - 0.5)) * strides);
    } else {
      x.copy_((x + points[0]) * strides);
      y.copy_((y + points[1]) * strides);
    }
    columns.push_back(kpts);
  }
  return torch::cat(columns, 1);  // [B, 4 + nc (+ K*ndim), A]
}

void HeadImpl::topk(EvalOutput& out, int64_t max_det, bool agnostic) const {
  const int64_t nc = options_.nc;
  const auto preds = out.decoded.permute({0, 2, 1});  // [B, A, 4 + nc (+ nk)]
  const int64_t batch = preds.size(0), anchors = preds.size(1);
  const int64_t k = std::min(max_det, anchors);
  const auto boxes = preds.slice(2, 0, 4);          // [B, A, 4]
  const auto scores = preds.slice(2, 4, 4 + nc);    // [B, A, nc]
  torch::Tensor top_scores, anchor_index, classes;  // [B, k], [B, k], [B, k, 1]
  if (agnostic) {
    // The best k anchors by their best class, one row each.
    auto [best, best_class] = scores.max(-1);  // [B, A]
    std::tie(top_scores, anchor_index) = best.topk(k);
    classes = best_class.gather(1, anchor_index).unsqueeze(-1).to(preds.scalar_type());
  } else {
    // Best k anchors by their best class, then the best k (anchor, class) pairs among them.
    const auto candidate = std::get<1>(std::get<0>(scores.max(-1)).topk(k)).unsqueeze(-1);
    const auto candidate_scores = scores.gather(1, candidate.repeat({1, 1, nc}));  // [B, k, nc]
    torch::Tensor flat_index;                                                      // [B, k]
    std::tie(top_scores, flat_index) = candidate_scores.flatten(1).topk(k);
    anchor_index = candidate.squeeze(-1).gather(1, flat_index.div(nc, "floor"));
    classes = flat_index.remainder(nc).unsqueeze(-1).to(preds.scalar_type());
  }
  const auto gather_rows = anchor_index.unsqueeze(-1);  // [B,k,1]
  std::vector<torch::Tensor> columns{boxes.gather(1, gather_rows.repeat({1, 1, 4})),
                                     top_scores.unsqueeze(-1), classes};
  if (options_.pose()) {
    const int64_t nk = options_.num_keypoint_values();
    const auto kpts = preds.slice(2, 4 + nc, 4 + nc + nk);  // [B, A, nk]
    columns.push_back(kpts.gather(1, gather_rows.repeat({1, 1, nk})));
  }
  out.detections = torch::cat(columns, -1);  // [B, k, 6 (+ nk)]
  out.topk_anchor_index = anchor_index;
  (void)batch;
}

void HeadImpl::fuse() {
  if (fused_) return;
  fused_ = true;
  if (options_.end2end) {
    for (const char* name : {"cv2", "cv3", "cv4", "cv4_kpts"}) {
      if (named_children().contains(name)) unregister_module(name);
    }
    one2many_ = Branch{};
  }
  if (options_.kind == HeadKind::kPose26) {
    for (const char* name : {"cv4_sigma", "one2one_cv4_sigma", "flow_model"}) {
      if (named_children().contains(name)) unregister_module(name);
    }
    one2many_.sigma = nullptr;
    one2one_.sigma = nullptr;
    flow_model_ = nullptr;
  }
}

std::vector<const torch::nn::Module*> HeadImpl::cls_towers() const {
  std::vector<const torch::nn::Module*> towers;
  for (const Branch* branch : {&one2many_, &one2one_}) {
    if (branch->cls) towers.push_back(branch->cls.get());
  }
  return towers;
}

}  // namespace detrain::model
