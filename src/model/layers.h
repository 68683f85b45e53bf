// The building blocks of YOLO26 / YOLO11 (Conv+BN+SiLU, Bottleneck, C2f/C3k2, C3/C3k, SPPF,
// Attention, PSABlock, C2PSA, Concat, DFL), with submodule names equal to the reference's
// state-dict names. Deliberate differences: activations are functional (no SiLU module per Conv),
// and every block counts its multiply-accumulates while a MacCountScope is alive (for GFLOPs).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/replicas.h"
#include "model/bn_silu.h"

namespace detrain::model {

// BatchNorm settings the reference's initialize_weights applies to every BN.
constexpr double kBnEps = 1e-3;
constexpr double kBnMomentum = 0.03;

// ---- multiply-accumulate counting (GFLOPs) ---------------------------------------------------

// MACs of one forward pass, split by how they grow with the input area: convolutions grow
// linearly, attention's token-by-token products quadratically.
struct MacCount {
  double linear = 0;     // convs, linears, DFL
  double quadratic = 0;  // attention q^T k and v attn^T
};

// While alive, forward passes on this thread add their MACs to `count`. Scopes nest (the
// innermost wins); the thread-local pointer is the only state and is restored on exit.
class MacCountScope {
 public:
  explicit MacCountScope(MacCount& count);
  ~MacCountScope();
  MacCountScope(const MacCountScope&) = delete;
  MacCountScope& operator=(const MacCountScope&) = delete;

 private:
  MacCount* previous_;
};

// MACs of a convolution that produced `output` from `weight` ([Co, Ci/g, kh, kw]).
void count_conv_macs(const torch::Tensor& output, const torch::Tensor& weight);

// ---- containers ------------------------------------------------------------------------------

// An ordered chain of single-input modules named "0", "1", ... (the reference's nn.Sequential).
// Unlike torch::nn::Sequential it has a plain forward, so it nests inside other chains.
class ChainImpl : public torch::nn::Module {
 public:
  ChainImpl() = default;
  template <class... Modules>
  explicit ChainImpl(Modules&&... modules) {
    (push_back(std::forward<Modules>(modules)), ...);
  }
  template <class M>
  void push_back(M module) {
    blocks_.emplace_back(register_module(std::to_string(blocks_.size()), module));
  }
  void push_back(torch::nn::AnyModule module) {
    register_module(std::to_string(blocks_.size()), module.ptr());
    blocks_.push_back(std::move(module));
  }
  torch::Tensor forward(torch::Tensor x);
  size_t size() const { return blocks_.size(); }
  torch::nn::AnyModule& at(size_t i) { return blocks_.at(i); }

 private:
  std::vector<torch::nn::AnyModule> blocks_;
};
TORCH_MODULE(Chain);

// A plain biased 2-D convolution with parameters `weight` and `bias` directly on the module
// (the reference's nn.Conv2d at the end of each head tower), with PyTorch's default init.
class PlainConvImpl : public torch::nn::Module {
 public:
  PlainConvImpl(int64_t c1, int64_t c2, int64_t k = 1, bool bias = true);
  torch::Tensor forward(const torch::Tensor& x);  // [B, c1, H, W] -> [B, c2, H, W]
  torch::Tensor weight;                           // [c2, c1, k, k]
  torch::Tensor bias;                             // [c2] (undefined without bias)
};
TORCH_MODULE(PlainConv);

// ---- blocks ----------------------------------------------------------------------------------

struct ConvOptions {
  int64_t k = 1;
  int64_t s = 1;
  int64_t p = -1;  // -1: "same" padding k/2 (dilation aware)
  int64_t g = 1;
  int64_t d = 1;
  bool act = true;  // SiLU after BN; false: identity
};

// Conv2d (no bias) -> BatchNorm2d -> SiLU. After fuse() the BN is folded into a biased conv.
class ConvImpl : public torch::nn::Module {
 public:
  ConvImpl(int64_t c1, int64_t c2, ConvOptions options = {});
  torch::Tensor forward(const torch::Tensor& x);  // [B, c1, H, W] -> [B, c2, H/s, W/s]
  void fuse();
  bool fused() const { return !bn; }
  bool activated() const { return act_; }  // SiLU after the convolution (read by the exporter)
  // Training-mode BN statistics over all data-parallel ranks (null: this process's batch).
  void set_sync_batch_norm(std::shared_ptr<const Replicas> replicas) {
    sync_replicas_ = std::move(replicas);
  }
  // runtime.bn_silu: training-mode BN + SiLU as one fused node (model/bn_silu.h) or as LibTorch's
  // two.
  void set_bn_silu_kernel(BnSiluKernel kernel) { bn_silu_kernel_ = kernel; }

  torch::nn::Conv2d conv{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};  // null once fused

 private:
  bool act_;
  std::shared_ptr<const Replicas> sync_replicas_;
  BnSiluKernel bn_silu_kernel_ = BnSiluKernel::kAten;
};
TORCH_MODULE(Conv);

// Every Conv block under `root` takes `kernel` for its training-mode BN + SiLU.
void set_bn_silu_kernel(torch::nn::Module& root, BnSiluKernel kernel);

// Conv(c1, c_, k0) -> Conv(c_, c2, k1, groups g), plus the input when shortcut and c1 == c2.
class BottleneckImpl : public torch::nn::Module {
 public:
  BottleneckImpl(int64_t c1, int64_t c2, bool shortcut = true, int64_t g = 1,
                 std::pair<int64_t, int64_t> k = {3, 3}, double e = 0.5);
  torch::Tensor forward(const torch::Tensor& x);
  bool residual() const { return add_; }

 private:
  Conv cv1{nullptr}, cv2{nullptr};
  bool add_;
};
TORCH_MODULE(Bottleneck);

// What fills the n slots of a C2f-style block.
enum class C2fBlock {
  kC2f,         // C2f: Bottleneck(c, c, k 3x3/3x3, e 1.0)
  kBottleneck,  // C3k2: Bottleneck(c, c, k 3x3/3x3, e 0.5)
  kC3k,         // C3k2 with c3k: C3k(c, c, n 2)
  kAttention,   // C3k2 with attn: Bottleneck(c, c) then PSABlock(c)
};

// CSP block: cv1 splits into two halves; n blocks run one after the other on the second half,
// every intermediate output is kept, and cv2 fuses the concatenation. C2f and C3k2.
class C2fImpl : public torch::nn::Module {
 public:
  C2fImpl(int64_t c1, int64_t c2, int64_t n, C2fBlock block, bool shortcut, int64_t g, double e);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  int64_t c_;
  Conv cv1{nullptr}, cv2{nullptr};
  Chain m{nullptr};
};
TORCH_MODULE(C2f);

// CSP with 3 convs: cv3(cat(m(cv1(x)), cv2(x))); the bottlenecks use kernels `k` and e 1.0.
// C3 uses k = (1, 3); C3k uses (k, k).
class C3Impl : public torch::nn::Module {
 public:
  C3Impl(int64_t c1, int64_t c2, int64_t n, bool shortcut, int64_t g, double e,
         std::pair<int64_t, int64_t> k);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  Conv cv1{nullptr}, cv2{nullptr}, cv3{nullptr};
  Chain m{nullptr};
};
TORCH_MODULE(C3);

// Spatial pyramid pooling (fast): cv1 (no activation), n chained 5x5 max-pools, cv2 on the
// concatenation, plus the input when shortcut and c1 == c2 (YOLO26).
class SPPFImpl : public torch::nn::Module {
 public:
  // cv1_act: SiLU after cv1 (YOLO11 / YOLOv8 rows; YOLO26's cv1 is linear, see the builder).
  SPPFImpl(int64_t c1, int64_t c2, int64_t k = 5, int64_t n = 3, bool shortcut = false,
           bool cv1_act = false);
  torch::Tensor forward(const torch::Tensor& x);
  int64_t pools() const { return n_; }
  bool residual() const { return add_; }

 private:
  Conv cv1{nullptr}, cv2{nullptr};
  torch::nn::MaxPool2d m{nullptr};
  int64_t n_;
  bool add_;
};
TORCH_MODULE(SPPF);

// Multi-head self-attention over the H*W positions with convolutional qkv / proj and a
// depthwise positional encoding of v.
class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(int64_t dim, int64_t num_heads, double attn_ratio = 0.5);
  torch::Tensor forward(const torch::Tensor& x);  // [B, dim, H, W] -> same
  int64_t num_heads() const { return num_heads_; }
  int64_t head_dim() const { return head_dim_; }
  int64_t key_dim() const { return key_dim_; }
  double scale() const { return scale_; }

 private:
  int64_t num_heads_, head_dim_, key_dim_;
  double scale_;
  Conv qkv{nullptr}, proj{nullptr}, pe{nullptr};
};
TORCH_MODULE(Attention);

// x + attn(x), then x + ffn(x) (shortcut), ffn = Conv(c, 2c, 1) -> Conv(2c, c, 1, no act).
class PSABlockImpl : public torch::nn::Module {
 public:
  PSABlockImpl(int64_t c, double attn_ratio, int64_t num_heads, bool shortcut = true);
  torch::Tensor forward(const torch::Tensor& x);
  bool residual() const { return add_; }

 private:
  Attention attn{nullptr};
  Chain ffn{nullptr};
  bool add_;
};
TORCH_MODULE(PSABlock);

// C2 skeleton with n PSABlocks on the second half.
class C2PSAImpl : public torch::nn::Module {
 public:
  C2PSAImpl(int64_t c1, int64_t c2, int64_t n, double e = 0.5);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  int64_t c_;
  Conv cv1{nullptr}, cv2{nullptr};
  Chain m{nullptr};
};
TORCH_MODULE(C2PSA);

// Concatenates its inputs along `dim` (the only multi-input layer).
class ConcatImpl : public torch::nn::Module {
 public:
  explicit ConcatImpl(int64_t dim = 1) : dim_(dim) {}
  torch::Tensor forward(std::vector<torch::Tensor> inputs);
  int64_t dim() const { return dim_; }

 private:
  int64_t dim_;
};
TORCH_MODULE(Concat);

// Nearest-neighbour upsampling by an integer factor.
class UpsampleImpl : public torch::nn::Module {
 public:
  explicit UpsampleImpl(int64_t scale) : scale_(scale) {}
  torch::Tensor forward(const torch::Tensor& x);  // [B, C, H, W] -> [B, C, H*s, W*s]
  int64_t scale() const { return scale_; }

 private:
  int64_t scale_;
};
TORCH_MODULE(Upsample);

// Distribution focal loss integral: softmax over reg_max bins per side, then the expectation
// with the frozen weights 0..reg_max-1 of a 1x1 conv (state-dict name `conv.weight`). Computed
// as elementwise ops and in-order sums (see sum_in_order) rather than a fused softmax and a
// conv, so that the exported ONNX graph (export/onnx_head.cpp) rounds exactly as this does.
class DFLImpl : public torch::nn::Module {
 public:
  explicit DFLImpl(int64_t reg_max = 16);
  torch::Tensor forward(const torch::Tensor& x);  // [B, 4*reg_max, A] -> [B, 4, A]

 private:
  int64_t reg_max_;
  PlainConv conv{nullptr};
};
TORCH_MODULE(DFL);

// `t` summed over `dim` one slice at a time in index order, keeping `dim` (size 1): a fixed
// sequence of float additions that any runtime reproduces, where a library reduction or a GEMM
// picks its own order (a few float steps of difference, which decoding multiplies by strides).
torch::Tensor sum_in_order(const torch::Tensor& t, int64_t dim);

// Folds every Conv's BatchNorm into its convolution (inference only).
void fuse_conv_bn(torch::nn::Module& root);

}  // namespace detrain::model
