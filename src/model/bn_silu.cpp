// The fused BatchNorm + SiLU autograd node; see bn_silu.h.
#include "model/bn_silu.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/errors.h"
#include "compat/torch_compat.h"
#include "model/bn_silu_kernels.h"

namespace detrain::model {

namespace {

using bn_silu::Kernels;
using bn_silu::Layout;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The widest kernels this CPU runs, up to the level LibTorch's own kernels run at here (so
// that ATEN_CPU_CAPABILITY=avx2 lowers both alike). Both are fixed for the process, so the
// choice is made once rather than in every node's forward and backward.
const Kernels& pick_kernels() {
  const compat::CpuVectorLevel level = compat::cpu_vector_level();
  const Kernels* avx512 = bn_silu::avx512_kernels();
  if (avx512 && level.avx512) return *avx512;
  const Kernels* avx2 = bn_silu::avx2_kernels();
  if (avx2 && level.avx2) return *avx2;
  return bn_silu::scalar_kernels();
}
const Kernels& best_kernels() {
  static const Kernels& kernels = pick_kernels();
  return kernels;
}

bool dense_nhwc(const torch::Tensor& x) {
  return x.is_contiguous(torch::MemoryFormat::ChannelsLast) && !x.is_contiguous();
}

Layout layout_of(const torch::Tensor& x, bool nhwc) {
  return Layout{x.size(0), x.size(1), x.size(2) * x.size(3), nhwc};
}

bn_silu::Dtype dtype_of(const torch::Tensor& x) {
  return x.scalar_type() == torch::kBFloat16 ? bn_silu::Dtype::kBf16 : bn_silu::Dtype::kFloat;
}

// Units per thread chunk: about 16k elements, so that small layers stay on one thread.
int64_t grain(const Layout& layout) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, layout.unit_size()));
}

// Per-channel sums over every unit, split over LibTorch's threads: each thread adds into its own
// rows of `partials`, which are then added in thread order (the same order on every run with the
// same thread count).
template <class Body>
std::vector<std::vector<double>> channel_sums(const Layout& layout, int outputs, const Body& body) {
  const int threads = at::get_num_threads();
  const int64_t channels = layout.channels;
  std::vector<double> partials(static_cast<size_t>(threads) * outputs * channels, 0.0);
  at::parallel_for(0, layout.units(), grain(layout), [&](int64_t begin, int64_t end) {
    double* mine = partials.data() + static_cast<size_t>(at::get_thread_num()) * outputs * channels;
    body(begin, end, mine, mine + channels);
  });
  std::vector<std::vector<double>> sums(outputs, std::vector<double>(channels, 0.0));
  for (int t = 0; t < threads; ++t)
    for (int k = 0; k < outputs; ++k)
      for (int64_t c = 0; c < channels; ++c)
        sums[k][c] += partials[(static_cast<size_t>(t) * outputs + k) * channels + c];
  return sums;
}

torch::Tensor float_tensor(const std::vector<float>& values) {
  return torch::from_blob(const_cast<float*>(values.data()), {static_cast<int64_t>(values.size())},
                          torch::kFloat)
      .clone();
}

std::vector<float> float_values(const torch::Tensor& t) {
  const torch::Tensor f = t.detach().to(torch::kFloat).contiguous();
  return std::vector<float>(f.data_ptr<float>(), f.data_ptr<float>() + f.numel());
}

// Each channel's origin for the one-pass variance: the mean of 64 pixels spread evenly over the
// batch, so that |mean - origin| is a fraction of the channel's spread and the variance,
// sum (x - origin)^2 / n - (mean - origin)^2, loses no more than float's own rounding. (The first
// pixels alone would not do: a letterbox border can make them all alike.)
std::vector<float> channel_origin(const torch::Tensor& x, const Layout& layout) {
  const int64_t pixels = layout.batch * layout.spatial;
  const int64_t samples = std::min<int64_t>(64, pixels);
  const bool bf16 = x.scalar_type() == torch::kBFloat16;
  const void* data = x.data_ptr();
  auto value = [&](int64_t index) {
    if (!bf16) return static_cast<const float*>(data)[index];
    return static_cast<float>(static_cast<const c10::BFloat16*>(data)[index]);
  };
  std::vector<double> sums(static_cast<size_t>(layout.channels), 0.0);
  for (int64_t j = 0; j < samples; ++j) {
    const int64_t pixel = j * pixels / samples;
    const int64_t image = pixel / layout.spatial, position = pixel % layout.spatial;
    for (int64_t c = 0; c < layout.channels; ++c)
      sums[c] += value(layout.nhwc ? pixel * layout.channels + c
                                   : (image * layout.channels + c) * layout.spatial + position);
  }
  std::vector<float> origin(sums.size());
  for (size_t c = 0; c < sums.size(); ++c) origin[c] = static_cast<float>(sums[c] / samples);
  return origin;
}

// z = x * scale + shift with scale = weight / std, shift = bias - mean * scale.
void affine_of(const std::vector<float>& weight, const std::vector<float>& bias,
               const std::vector<float>& mean, const std::vector<float>& invstd,
               std::vector<float>& scale, std::vector<float>& shift) {
  const size_t channels = weight.size();
  scale.resize(channels);
  shift.resize(channels);
  for (size_t c = 0; c < channels; ++c) {
    scale[c] = weight[c] * invstd[c];
    shift[c] = bias[c] - mean[c] * scale[c];
  }
}

class BnSiluFunction : public torch::autograd::Function<BnSiluFunction> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input,
                               const torch::Tensor& weight, const torch::Tensor& bias,
                               const torch::Tensor& running_mean, const torch::Tensor& running_var,
                               double momentum, double eps) {
    const bool nhwc = dense_nhwc(input);
    const torch::Tensor x = nhwc ? input : input.contiguous();
    const Layout layout = layout_of(x, nhwc);
    const Kernels& k = best_kernels();
    const bn_silu::Dtype dtype = dtype_of(x);
    const void* data = x.data_ptr();
    const int64_t channels = layout.channels;
    const double count = static_cast<double>(layout.batch * layout.spatial);

    // One pass for the mean and the variance: sums of x - origin and its square, with each
    // channel's origin a sample of that channel (so near its mean), then in double:
    // mean = origin + s1 / n, variance = s2 / n - (s1 / n)^2.
    const std::vector<float> origin = channel_origin(x, layout);
    const auto sums = channel_sums(layout, 2, [&](int64_t b, int64_t e, double* s1, double* s2) {
      k.shifted_sums(data, dtype, layout, origin.data(), b, e, s1, s2);
    });
    std::vector<float> mean(channels), invstd(channels);
    std::vector<double> squares(channels);  // sum of (x - mean)^2
    for (int64_t c = 0; c < channels; ++c) {
      const double offset = sums[0][c] / count;
      mean[c] = static_cast<float>(origin[c] + offset);
      squares[c] = std::max(0.0, sums[1][c] - offset * sums[0][c]);
      invstd[c] = static_cast<float>(1.0 / std::sqrt(squares[c] / count + eps));
    }

    std::vector<float> scale, shift;
    affine_of(float_values(weight), float_values(bias), mean, invstd, scale, shift);
    torch::Tensor y = torch::empty_like(x);
    void* out = y.data_ptr();
    at::parallel_for(0, layout.units(), grain(layout), [&](int64_t b, int64_t e) {
      k.forward(data, out, dtype, layout, scale.data(), shift.data(), b, e);
    });

    // BatchNorm's running statistics: the unbiased variance, weighted by the momentum.
    {
      torch::NoGradGuard no_grad;
      const torch::Tensor batch_mean = float_tensor(mean);
      std::vector<float> unbiased(channels);
      for (int64_t c = 0; c < channels; ++c)
        unbiased[c] = static_cast<float>(squares[c] / (count - 1));
      running_mean.mul_(1 - momentum).add_(batch_mean.to(running_mean.dtype()), momentum);
      running_var.mul_(1 - momentum).add_(float_tensor(unbiased).to(running_var.dtype()), momentum);
    }
    ctx->save_for_backward({x, weight, bias, float_tensor(mean), float_tensor(invstd)});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const bool nhwc = dense_nhwc(x);
    const Layout layout = layout_of(x, nhwc);
    const torch::Tensor dy =
        grads[0]
            .to(x.scalar_type())
            .contiguous(nhwc ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous);
    const Kernels& k = best_kernels();
    const bn_silu::Dtype dtype = dtype_of(x);
    const int64_t channels = layout.channels;
    const double count = static_cast<double>(layout.batch * layout.spatial);
    const std::vector<float> mean = float_values(saved[3]), invstd = float_values(saved[4]);
    std::vector<float> scale, shift;
    affine_of(float_values(saved[1]), float_values(saved[2]), mean, invstd, scale, shift);

    // The sums pass writes dz into dx's buffer; the second pass turns it into dx in place.
    torch::Tensor dx = torch::empty_like(x);
    const auto sums = channel_sums(layout, 2, [&](int64_t b, int64_t e, double* dz, double* dzc) {
      k.backward_sums(x.data_ptr(), dy.data_ptr(), dx.data_ptr(), dtype, layout, scale.data(),
                      shift.data(), mean.data(), b, e, dz, dzc);
    });
    // dx = scale (dz - mean(dz) - xhat mean(dz xhat)) with xhat = (x - mean) invstd, as
    // dz * scale + x * a + b.
    std::vector<float> a(channels), b(channels), weight_grad(channels), bias_grad(channels);
    for (int64_t c = 0; c < channels; ++c) {
      const double ac = -static_cast<double>(scale[c]) * invstd[c] * invstd[c] * sums[1][c] / count;
      a[c] = static_cast<float>(ac);
      b[c] = static_cast<float>(-scale[c] * sums[0][c] / count - ac * mean[c]);
      weight_grad[c] = static_cast<float>(sums[1][c] * invstd[c]);
      bias_grad[c] = static_cast<float>(sums[0][c]);
    }
    at::parallel_for(0, layout.units(), grain(layout), [&](int64_t begin, int64_t end) {
      k.backward_apply(x.data_ptr(), dx.data_ptr(), dx.data_ptr(), dtype, layout, scale.data(),
                       a.data(), b.data(), begin, end);
    });
    const torch::Tensor& weight = saved[1];
    return {dx,
            float_tensor(weight_grad).to(weight.dtype()),
            float_tensor(bias_grad).to(saved[2].dtype()),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor()};
  }
};

}  // namespace

BnSiluDecision choose_bn_silu(const std::string& option, const torch::Device& device) {
  if (option == "aten") return {BnSiluKernel::kAten, "runtime.bn_silu=aten"};
  if (option == "fused") {
    if (!device.is_cpu())
      throw ConfigError(
          "runtime.bn_silu=fused runs on the CPU only; use runtime.bn_silu=auto or "
          "aten with runtime.device=" +
          device.str());
    return {BnSiluKernel::kFused, "runtime.bn_silu=fused"};
  }
  if (option != "auto")
    throw ConfigError("config: runtime.bn_silu is '" + option + "'; expected auto, fused or aten");
  if (!device.is_cpu()) return {BnSiluKernel::kAten, "auto: not a CPU run"};
  // Where a vector build runs at LibTorch's own level (ATEN_CPU_CAPABILITY lowers both, as for
  // runtime.memory_format): measured faster than LibTorch's two ops with AVX-512 and with AVX2;
  // the portable kernel is not.
  const std::string kernels = best_kernels().name;
  if (kernels.rfind("avx512", 0) == 0) return {BnSiluKernel::kFused, "auto: CPU with AVX-512"};
  if (kernels == "avx2") return {BnSiluKernel::kFused, "auto: CPU with AVX2"};
  return {BnSiluKernel::kAten, "auto: CPU without AVX2"};
}

std::string describe(const BnSiluDecision& decision) {
  const std::string kernel = decision.kernel == BnSiluKernel::kFused
                                 ? std::string("fused, ") + best_kernels().name
                                 : std::string("aten");
  return kernel + " (" + decision.reason + ")";
}

bool fused_bn_silu_supports(const torch::Tensor& x, const torch::nn::BatchNorm2dImpl& bn) {
  const auto& o = bn.options;
  return x.dim() == 4 && x.device().is_cpu() &&
         (x.scalar_type() == torch::kFloat || x.scalar_type() == torch::kBFloat16) &&
         x.size(0) * x.size(2) * x.size(3) > 1 && o.affine() && o.track_running_stats() &&
         o.momentum().has_value() && bn.weight.defined() && bn.running_mean.defined() &&
         bn.weight.device().is_cpu();
}

torch::Tensor fused_bn_silu(const torch::Tensor& x, torch::nn::BatchNorm2dImpl& bn) {
  {
    torch::NoGradGuard no_grad;
    bn.num_batches_tracked.add_(1);  // as BatchNorm2d's forward in training mode
  }
  return BnSiluFunction::apply(x, bn.weight, bn.bias, bn.running_mean, bn.running_var,
                               *bn.options.momentum(), bn.options.eps());
}

}  // namespace detrain::model
