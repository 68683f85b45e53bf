// The CPU kernels of the fused training-mode BatchNorm + SiLU (model/bn_silu.h): per-channel sums
// over a dense activation batch and the element-wise passes, in NCHW or NHWC, on float or bf16
// data. Each function walks a range of "units" (NHWC: rows of C channels, one per pixel; NCHW:
// planes of H*W pixels, one per image and channel), so a caller can split a batch over threads;
// the sums go into per-channel double arrays the caller owns (one per thread). No LibTorch here:
// the kernels are plain loops over one vector type, compiled portably (bn_silu_scalar.cpp), for
// AVX2 (bn_silu_avx2.cpp) and for AVX-512 (bn_silu_avx512.cpp).
#pragma once

#include <cstdint>

namespace detrain::model::bn_silu {

enum class Dtype { kFloat, kBf16 };

// A dense [N, C, H, W] batch in memory order NCHW or NHWC.
struct Layout {
  int64_t batch = 0;
  int64_t channels = 0;
  int64_t spatial = 0;  // H * W
  bool nhwc = false;
  int64_t units() const { return nhwc ? batch * spatial : batch * channels; }
  int64_t unit_size() const { return nhwc ? channels : spatial; }
};

// z = x * scale[c] + shift[c] is the normalized, affine BatchNorm output; y = silu(z) = z * s,
// s = sigmoid(z); dz = dy * s * (1 + z (1 - s)) is the gradient at z.
struct Kernels {
  const char* name;  // "avx512", "scalar"
  // sum[c] += sum of (x - origin[c]); sum_sq[c] += sum of (x - origin[c])^2. One pass gives the
  // mean and the variance; an origin near the mean (a sample of the channel) keeps the
  // variance's subtraction from cancelling.
  void (*shifted_sums)(const void* x, Dtype dtype, const Layout& layout, const float* origin,
                       int64_t begin, int64_t end, double* sum, double* sum_sq);
  // y = silu(x * scale + shift), in x's dtype
  void (*forward)(const void* x, void* y, Dtype dtype, const Layout& layout, const float* scale,
                  const float* shift, int64_t begin, int64_t end);
  // dz = the gradient at z, written in x's dtype (for backward_apply: the sigmoid is computed
  // once); sum_dz[c] += sum of dz; sum_dz_centered[c] += sum of dz * (x - mean[c])
  void (*backward_sums)(const void* x, const void* dy, void* dz, Dtype dtype, const Layout& layout,
                        const float* scale, const float* shift, const float* mean, int64_t begin,
                        int64_t end, double* sum_dz, double* sum_dz_centered);
  // dx = dz * scale + x * a[c] + b[c], in x's dtype; dx may be dz itself (in place)
  void (*backward_apply)(const void* x, const void* dz, void* dx, Dtype dtype, const Layout& layout,
                         const float* scale, const float* a, const float* b, int64_t begin,
                         int64_t end);
};

// Portable C++: any CPU.
const Kernels& scalar_kernels();
// AVX-512 (F, BW, VL, DQ), 16 lanes, with AVX512-BF16's conversion where the CPU has it; null
// where this CPU (or this build) lacks AVX-512.
const Kernels* avx512_kernels();
// The same without the AVX512-BF16 conversion (tests: both roundings agree).
const Kernels* avx512_kernels_without_bf16();
// AVX2 and FMA, 8 lanes; null where this CPU (or this build) lacks them.
const Kernels* avx2_kernels();

}  // namespace detrain::model::bn_silu
