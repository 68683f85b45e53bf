// Quintic Newton-Schulz orthogonalisation (the reference's zeropower_via_newtonschulz5): one
// matrix, a stack [k, r, c] with a norm per matrix, or several stacks at once (a plan). The
// compute dtype is bf16 (as the reference) or fp32. Difference: bf16 matmuls accumulate in fp32
// and round once (the golden variant_f32acc), also on the CPU where torch 1.13 accumulates in bf16.
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

// `matrix` [r, c] -> [r, c] in `compute` dtype: X = m / (|m|_F + eps), then 5 steps of
// A = X X^T, B = b A + c A A, X = a X + B X on the wide orientation (X^T when r > c), each line
// rounded once to `compute` as Ultralytics 8.4.190's baddbmm lines are (fp32 coefficients).
torch::Tensor newton_schulz(const torch::Tensor& matrix, torch::ScalarType compute);

// `stack` [k, r, c] -> [k, r, c]: the same iteration for each matrix, with its own norm. On the
// CPU each slice runs the direct call's gemms and roundings; the norm is a batched reduction
// (for k == 1 the direct call's, so a one-matrix stack equals newton_schulz bit for bit).
torch::Tensor newton_schulz_batched(const torch::Tensor& stack, torch::ScalarType compute);

class NsWorkspace;

// Several stacks of fixed shapes orthogonalised together, as MuSGD's buckets are every step:
// fp32 workspaces are allocated once per stack (at its first CPU run), and all the stacks'
// matrices share one parallel region on the CPU. Each result equals newton_schulz_batched.
class NewtonSchulzPlan {
 public:
  NewtonSchulzPlan(std::vector<std::vector<int64_t>> shapes, torch::ScalarType compute);
  ~NewtonSchulzPlan();
  NewtonSchulzPlan(NewtonSchulzPlan&&) noexcept;
  NewtonSchulzPlan& operator=(NewtonSchulzPlan&&) noexcept;

  // stacks[i] has shapes[i], or is undefined (skipped: result undefined). Results are in the
  // compute dtype; fp32 CPU results are views of the workspace, valid until the next run.
  std::vector<torch::Tensor> run(const std::vector<torch::Tensor>& stacks);

 private:
  std::vector<std::vector<int64_t>> shapes_;  // each [k, r, c]
  torch::ScalarType compute_;
  std::vector<std::unique_ptr<NsWorkspace>> workspaces_;  // per stack, on the wide orientation
};

}  // namespace detrain::optim
