// Quintic Newton-Schulz orthogonalisation (the reference's zeropower_via_newtonschulz5): one
// matrix, a stack [k, r, c] with a norm per matrix, or several stacks at once (a plan). The
// compute dtype is bf16 (as the reference) or fp32; bf16 matmuls accumulate in fp32 and round
// once per line (the golden variant_f32acc). On the CPU one of two kernels runs the five steps
// (NsKernel): ATen's own bf16 matmuls where the CPU has bf16 instructions, else fp32 gemms with
// the bf16 roundings emulated in software; elsewhere (CUDA) always ATen's ops.
#pragma once

#include <torch/types.h>

#include <memory>
#include <vector>

namespace detrain::optim {

// Fixed coefficients and step count of the reference (Ultralytics 8.4.190 optim/muon.py).
constexpr double kNsA = 3.4445;
constexpr double kNsB = -4.7750;
constexpr double kNsC = 2.0315;
constexpr int kNsSteps = 5;
constexpr double kNsEps = 1e-7;  // added to the Frobenius norm before dividing

// Which kernel runs the five steps on the CPU (`optim.ns_kernel`).
enum class NsKernel {
  kAuto,      // native for bf16 where compat::cpu_has_native_bf16_gemm(), else emulated
  kNative,    // ATen's bmm / baddbmm in the compute dtype (ns_native): the reference's ops
  kEmulated,  // fp32 gemms in workspaces, bf16 roundings applied in software (ns_workspace)
};

// kNative or kEmulated: what `kernel` runs for `compute` on this CPU. fp32 under auto takes
// the workspace kernel (its fp32 gemms need no emulation and it schedules small matrices best).
NsKernel cpu_ns_kernel(NsKernel kernel, torch::ScalarType compute);

// "auto", "native", "emulated" (the config's spelling).
const char* ns_kernel_name(NsKernel kernel);

// `matrix` [r, c] -> [r, c] in `compute` dtype: X = m / (|m|_F + eps), then 5 steps of
// A = X X^T, B = b A + c A A, X = a X + B X on the wide orientation (X^T when r > c), each line
// rounded once to `compute` as Ultralytics 8.4.190's baddbmm lines are (fp32 coefficients).
torch::Tensor newton_schulz(const torch::Tensor& matrix, torch::ScalarType compute,
                            NsKernel kernel = NsKernel::kAuto);

// `stack` [k, r, c] -> [k, r, c]: the same iteration for each matrix, with its own norm (for
// k == 1 the direct call's, so a one-matrix stack equals newton_schulz bit for bit). The
// emulated kernel runs each slice's gemms as the direct call does (equal bits); the native one
// multiplies the stack in batched ops (one rounding of a long row may differ from the direct
// call's).
torch::Tensor newton_schulz_batched(const torch::Tensor& stack, torch::ScalarType compute,
                                    NsKernel kernel = NsKernel::kAuto);

class NsWorkspace;
class NsNativeStack;

// Several stacks of fixed shapes orthogonalised together, as MuSGD's buckets are every step:
// buffers are allocated once per stack (at its first run), and on the CPU all the stacks share
// one parallel region (emulated: matrix by matrix; native: stack by stack). Each result equals
// newton_schulz_batched with the same kernel.
class NewtonSchulzPlan {
 public:
  NewtonSchulzPlan(std::vector<std::vector<int64_t>> shapes, torch::ScalarType compute,
                   NsKernel kernel = NsKernel::kAuto);
  ~NewtonSchulzPlan();
  NewtonSchulzPlan(NewtonSchulzPlan&&) noexcept;
  NewtonSchulzPlan& operator=(NewtonSchulzPlan&&) noexcept;

  // stacks[i] has shapes[i], or is undefined (skipped: result undefined). Results are in the
  // compute dtype and may be views of the buffers, valid until the next run.
  std::vector<torch::Tensor> run(const std::vector<torch::Tensor>& stacks);

  // The kernel CPU stacks run with (kNative or kEmulated).
  NsKernel cpu_kernel() const { return cpu_kernel_; }

 private:
  std::vector<std::vector<int64_t>> shapes_;  // each [k, r, c]
  torch::ScalarType compute_;
  NsKernel cpu_kernel_;
  // Per stack, on the wide orientation: the emulated kernel's fp32 workspace (CPU), or the
  // native buffers (the CPU with kNative, and any other device).
  std::vector<std::unique_ptr<NsWorkspace>> workspaces_;
  std::vector<std::unique_ptr<NsNativeStack>> native_;
};

}  // namespace detrain::optim
