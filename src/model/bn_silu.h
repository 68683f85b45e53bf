// The training-mode BatchNorm + SiLU of a Conv block as one autograd node on the CPU
// (runtime.bn_silu). LibTorch runs them as two: batch_norm writes z, silu reads it and writes y,
// and backward reads and writes both again, each at memory speed and each op keeping its own
// saved tensor. The fused node keeps only the block's convolution output x, recomputes z and the
// sigmoid from the per-channel mean and 1/std, and makes two passes each way (forward: the mean
// and variance in one pass about a sampled origin, then y; backward: the two per-channel sums,
// writing dz into dx's buffer, then dx in place), on float or bf16 data in NCHW or NHWC
// (kernels: model/bn_silu_kernels.h). It updates the running statistics and
// num_batches_tracked as torch::nn::BatchNorm2d does; it differs from the two ops by rounding
// only (z is not rounded to bf16 before the SiLU). Measured: docs/perf/2026-12-07-fused-bn-silu.md.
#pragma once

#include <torch/torch.h>

#include <string>

namespace detrain::model {

enum class BnSiluKernel { kAten, kFused };

struct BnSiluDecision {
  BnSiluKernel kernel = BnSiluKernel::kAten;
  std::string reason;  // "auto: CPU with AVX-512", "runtime.bn_silu=aten"
};

// runtime.bn_silu: auto (fused on a CPU with AVX2 or AVX-512, aten elsewhere), fused, aten.
// fused on a CUDA device, or an unknown value, throws ConfigError naming the key.
BnSiluDecision choose_bn_silu(const std::string& option, const torch::Device& device);
std::string describe(const BnSiluDecision& decision);  // "fused, avx512 (auto: ...)"

// Whether fused_bn_silu takes this batch: a 4-D CPU float or bf16 tensor with more than one
// value per channel, and an affine BatchNorm with running statistics and a momentum.
bool fused_bn_silu_supports(const torch::Tensor& x, const torch::nn::BatchNorm2dImpl& bn);

// torch::silu(bn(x)) for `bn` in training mode, as one autograd node. The output has x's dtype
// and memory format (dense NHWC stays NHWC; anything else is made NCHW-contiguous).
torch::Tensor fused_bn_silu(const torch::Tensor& x, torch::nn::BatchNorm2dImpl& bn);

}  // namespace detrain::model
