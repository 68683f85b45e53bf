// The YOLO building blocks; see layers.h. Channel arithmetic (int(c2 * e), heads = c / 64,
// key_dim = head_dim / 2) follows the reference so that every tensor shape matches its weights.
#include "model/layers.h"

#include <cmath>

#include "model/bn_silu.h"
#include "model/channels_last.h"
#include "model/sync_batch_norm.h"

namespace detrain::model {

namespace {

thread_local MacCount* active_mac_count = nullptr;

int64_t scaled_channels(int64_t c, double e) { return static_cast<int64_t>(c * e); }

}  // namespace

MacCountScope::MacCountScope(MacCount& count) : previous_(active_mac_count) {
  active_mac_count = &count;
}

MacCountScope::~MacCountScope() { active_mac_count = previous_; }

void count_conv_macs(const torch::Tensor& output, const torch::Tensor& weight) {
  if (!active_mac_count) return;
  active_mac_count->linear +=
      static_cast<double>(output.numel()) * static_cast<double>(weight.numel() / weight.size(0));
}

// ---- containers ------------------------------------------------------------------------------

torch::Tensor ChainImpl::forward(torch::Tensor x) {
  for (auto& block : blocks_) x = block.forward(x);
  return x;
}

PlainConvImpl::PlainConvImpl(int64_t c1, int64_t c2, int64_t k, bool with_bias) {
  weight = register_parameter("weight", torch::empty({c2, c1, k, k}));
  // PyTorch's Conv2d.reset_parameters: Kaiming-uniform (a = sqrt(5)), bias U(+-1/sqrt(fan_in)).
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (with_bias) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(c1 * k * k));
    bias = register_parameter("bias", torch::empty({c2}).uniform_(-bound, bound));
  }
}

torch::Tensor PlainConvImpl::forward(const torch::Tensor& x) {
  auto y = torch::conv2d(x, weight, bias);  // [B, c2, H, W]
  count_conv_macs(y, weight);
  return y;
}

// ---- blocks ----------------------------------------------------------------------------------

ConvImpl::ConvImpl(int64_t c1, int64_t c2, ConvOptions o) : act_(o.act) {
  const int64_t padding = o.p >= 0 ? o.p : (o.d * (o.k - 1) + 1) / 2;
  conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(c1, c2, o.k)
                                                       .stride(o.s)
                                                       .padding(padding)
                                                       .groups(o.g)
                                                       .dilation(o.d)
                                                       .bias(false)));
  bn = register_module(
      "bn",
      torch::nn::BatchNorm2d(torch::nn::BatchNorm2dOptions(c2).eps(kBnEps).momentum(kBnMomentum)));
  // The reference registers nn.Identity as `act` when there is no activation; it has no
  // parameters but counts as a module in the layer total.
  if (!act_) register_module("act", torch::nn::Identity());
}

torch::Tensor ConvImpl::forward(const torch::Tensor& x) {
  auto y = conv(x);  // [B, c2, H', W']
  count_conv_macs(y, conv->weight);
  const bool synced = sync_replicas_ && sync_replicas_->active();
  if (bn && act_ && bn_silu_kernel_ == BnSiluKernel::kFused && is_training() && !synced &&
      fused_bn_silu_supports(y, *bn))
    return fused_bn_silu(y, *bn);
  if (bn)
    y = sync_replicas_ && sync_replicas_->active() && is_training()
            ? sync_batch_norm(y, *bn, *sync_replicas_)
            : bn(y);
  return with_dense_channels_last_grad(act_ ? torch::silu(y) : y);
}

void set_bn_silu_kernel(torch::nn::Module& root, BnSiluKernel kernel) {
  for (const auto& m : root.modules(/*include_self=*/true))
    if (auto* block = dynamic_cast<ConvImpl*>(m.get())) block->set_bn_silu_kernel(kernel);
}

void ConvImpl::fuse() {
  if (!bn) return;
  torch::NoGradGuard no_grad;
  const auto& o = conv->options;
  torch::nn::Conv2d folded(
      torch::nn::Conv2dOptions(o.in_channels(), o.out_channels(), o.kernel_size())
          .stride(o.stride())
          .padding(o.padding())
          .dilation(o.dilation())
          .groups(o.groups())
          .bias(true));
  const auto scale = bn->weight / torch::sqrt(bn->running_var + bn->options.eps());  // [c2]
  folded->weight.copy_(conv->weight * scale.view({-1, 1, 1, 1}));
  folded->bias.copy_(bn->bias - bn->running_mean * scale);
  folded->to(conv->weight.device(), conv->weight.scalar_type());
  conv = replace_module("conv", folded);
  unregister_module("bn");
  bn = nullptr;
}

BottleneckImpl::BottleneckImpl(int64_t c1, int64_t c2, bool shortcut, int64_t g,
                               std::pair<int64_t, int64_t> k, double e)
    : add_(shortcut && c1 == c2) {
  const int64_t hidden = scaled_channels(c2, e);
  cv1 = register_module("cv1", Conv(c1, hidden, ConvOptions{k.first}));
  ConvOptions second{k.second};
  second.g = g;
  cv2 = register_module("cv2", Conv(hidden, c2, second));
}

torch::Tensor BottleneckImpl::forward(const torch::Tensor& x) {
  auto y = cv2(cv1(x));
  return add_ ? x + y : y;
}

C2fImpl::C2fImpl(int64_t c1, int64_t c2, int64_t n, C2fBlock block, bool shortcut, int64_t g,
                 double e)
    : c_(scaled_channels(c2, e)) {
  cv1 = register_module("cv1", Conv(c1, 2 * c_));
  cv2 = register_module("cv2", Conv((2 + n) * c_, c2));
  Chain blocks;
  for (int64_t i = 0; i < n; ++i) {
    switch (block) {
      case C2fBlock::kC2f:
        blocks->push_back(Bottleneck(c_, c_, shortcut, g, std::pair<int64_t, int64_t>{3, 3}, 1.0));
        break;
      case C2fBlock::kBottleneck:
        blocks->push_back(Bottleneck(c_, c_, shortcut, g));
        break;
      case C2fBlock::kC3k:
        blocks->push_back(C3(c_, c_, 2, shortcut, g, 0.5, std::pair<int64_t, int64_t>{3, 3}));
        break;
      case C2fBlock::kAttention:
        blocks->push_back(Chain(Bottleneck(c_, c_, shortcut, g),
                                PSABlock(c_, 0.5, std::max<int64_t>(c_ / 64, 1))));
        break;
    }
  }
  m = register_module("m", blocks);
}

torch::Tensor C2fImpl::forward(const torch::Tensor& x) {
  auto parts = cv1(x).chunk(2, 1);  // 2 x [B, c, H, W]
  std::vector<torch::Tensor> outputs(parts.begin(), parts.end());
  outputs.reserve(2 + m->size());
  for (size_t i = 0; i < m->size(); ++i) outputs.push_back(m->at(i).forward(outputs.back()));
  return cv2(torch::cat(outputs, 1));
}

C3Impl::C3Impl(int64_t c1, int64_t c2, int64_t n, bool shortcut, int64_t g, double e,
               std::pair<int64_t, int64_t> k) {
  const int64_t hidden = scaled_channels(c2, e);
  cv1 = register_module("cv1", Conv(c1, hidden));
  cv2 = register_module("cv2", Conv(c1, hidden));
  cv3 = register_module("cv3", Conv(2 * hidden, c2));
  Chain blocks;
  for (int64_t i = 0; i < n; ++i)
    blocks->push_back(Bottleneck(hidden, hidden, shortcut, g, k, 1.0));
  m = register_module("m", blocks);
}

torch::Tensor C3Impl::forward(const torch::Tensor& x) {
  return cv3(torch::cat({m(cv1(x)), cv2(x)}, 1));
}

SPPFImpl::SPPFImpl(int64_t c1, int64_t c2, int64_t k, int64_t n, bool shortcut, bool cv1_act)
    : n_(n), add_(shortcut && c1 == c2) {
  const int64_t hidden = c1 / 2;
  ConvOptions first;
  first.act = cv1_act;
  cv1 = register_module("cv1", Conv(c1, hidden, first));
  cv2 = register_module("cv2", Conv(hidden * (n + 1), c2));
  m = register_module(
      "m", torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(k).stride(1).padding(k / 2)));
}

torch::Tensor SPPFImpl::forward(const torch::Tensor& x) {
  std::vector<torch::Tensor> pooled{cv1(x)};
  for (int64_t i = 0; i < n_; ++i) pooled.push_back(m(pooled.back()));
  auto y = cv2(torch::cat(pooled, 1));
  return add_ ? y + x : y;
}

AttentionImpl::AttentionImpl(int64_t dim, int64_t num_heads, double attn_ratio)
    : num_heads_(num_heads),
      head_dim_(dim / num_heads),
      key_dim_(static_cast<int64_t>(static_cast<double>(dim / num_heads) * attn_ratio)),
      scale_(std::pow(static_cast<double>(key_dim_), -0.5)) {
  ConvOptions linear;
  linear.act = false;
  qkv = register_module("qkv", Conv(dim, dim + 2 * key_dim_ * num_heads, linear));
  proj = register_module("proj", Conv(dim, dim, linear));
  ConvOptions depthwise{3};
  depthwise.g = dim;
  depthwise.act = false;
  pe = register_module("pe", Conv(dim, dim, depthwise));
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x) {
  const int64_t batch = x.size(0), channels = x.size(1), height = x.size(2), width = x.size(3);
  const int64_t tokens = height * width;
  auto split = qkv(x)
                   .view({batch, num_heads_, 2 * key_dim_ + head_dim_, tokens})
                   .split_with_sizes({key_dim_, key_dim_, head_dim_}, 2);
  const auto& q = split[0];                                          // [B, heads, key_dim, N]
  const auto& k = split[1];                                          // [B, heads, key_dim, N]
  const auto& v = split[2];                                          // [B, heads, head_dim, N]
  auto attn = (q.transpose(-2, -1).matmul(k) * scale_).softmax(-1);  // [B, heads, N, N]
  auto y = v.matmul(attn.transpose(-2, -1)).view({batch, channels, height, width}) +
           pe(v.reshape({batch, channels, height, width}));
  if (active_mac_count) {
    active_mac_count->quadratic += static_cast<double>(batch * num_heads_ * tokens * tokens) *
                                   static_cast<double>(key_dim_ + head_dim_);
  }
  return proj(y);
}

PSABlockImpl::PSABlockImpl(int64_t c, double attn_ratio, int64_t num_heads, bool shortcut)
    : add_(shortcut) {
  attn = register_module("attn", Attention(c, num_heads, attn_ratio));
  ConvOptions linear;
  linear.act = false;
  ffn = register_module("ffn", Chain(Conv(c, 2 * c), Conv(2 * c, c, linear)));
}

torch::Tensor PSABlockImpl::forward(const torch::Tensor& x) {
  auto y = add_ ? x + attn(x) : attn(x);
  return add_ ? y + ffn(y) : ffn(y);
}

C2PSAImpl::C2PSAImpl(int64_t c1, int64_t c2, int64_t n, double e) : c_(scaled_channels(c1, e)) {
  TORCH_CHECK(c1 == c2, "C2PSA needs equal input and output channels, got ", c1, " and ", c2);
  cv1 = register_module("cv1", Conv(c1, 2 * c_));
  cv2 = register_module("cv2", Conv(2 * c_, c1));
  Chain blocks;
  // The reference uses c // 64 heads here (0 below 64 channels, which it cannot run).
  for (int64_t i = 0; i < n; ++i)
    blocks->push_back(PSABlock(c_, 0.5, std::max<int64_t>(c_ / 64, 1)));
  m = register_module("m", blocks);
}

torch::Tensor C2PSAImpl::forward(const torch::Tensor& x) {
  auto parts = cv1(x).split(c_, 1);  // 2 x [B, c, H, W]
  return cv2(torch::cat({parts[0], m(parts[1])}, 1));
}

torch::Tensor ConcatImpl::forward(std::vector<torch::Tensor> inputs) {
  return torch::cat(inputs, dim_);
}

torch::Tensor UpsampleImpl::forward(const torch::Tensor& x) {
  return torch::upsample_nearest2d(x, {x.size(2) * scale_, x.size(3) * scale_});
}

DFLImpl::DFLImpl(int64_t reg_max) : reg_max_(reg_max) {
  conv = register_module("conv", PlainConv(reg_max, 1, 1, false));
  torch::NoGradGuard no_grad;
  conv->weight.copy_(torch::arange(reg_max, torch::kFloat).view({1, reg_max, 1, 1}));
  conv->weight.set_requires_grad(false);
}

torch::Tensor sum_in_order(const torch::Tensor& t, int64_t dim) {
  torch::Tensor total = t.narrow(dim, 0, 1);
  for (int64_t i = 1; i < t.size(dim); ++i) total = total + t.narrow(dim, i, 1);
  return total;
}

torch::Tensor DFLImpl::forward(const torch::Tensor& x) {
  const int64_t batch = x.size(0), anchors = x.size(2);
  // [B, 4*R, A] -> [B, R, 4, A]: softmax over the bins (max-shifted exp over its in-order
  // sum), then the expectation: the sum in order of the probabilities times the conv weights.
  const auto logits = x.view({batch, 4, reg_max_, anchors}).transpose(2, 1);
  const auto e = (logits - logits.amax(1, /*keepdim=*/true)).exp();
  const auto probs = e / sum_in_order(e, 1);
  return sum_in_order(probs * conv->weight, 1).view({batch, 4, anchors});
}

void fuse_conv_bn(torch::nn::Module& root) {
  for (const auto& module : root.modules()) {
    if (auto conv = std::dynamic_pointer_cast<ConvImpl>(module)) conv->fuse();
  }
}

}  // namespace detrain::model
