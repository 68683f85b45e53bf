// Quintic Newton-Schulz orthogonalisation (the reference's zeropower_via_newtonschulz5): one
// matrix, or a stack [k, r, c] with a norm per matrix and batched matmuls. The compute dtype is
// selectable (bf16 as the reference, or fp32). Difference: bf16 matmuls accumulate in fp32 and
// round once (the golden variant_f32acc), also on the CPU where torch 1.13 accumulates in bf16.
#pragma once

#include <torch/types.h>

namespace detrain::optim {

// Fixed coefficients and step count of the reference (reference-yolo.md 2.1).
constexpr double kNsA = 3.4445;
constexpr double kNsB = -4.7750;
constexpr double kNsC = 2.0315;
constexpr int kNsSteps = 5;
constexpr double kNsEps = 1e-7;  // added to the Frobenius norm before dividing

// `matrix` [r, c] -> [r, c] in `compute` dtype: X = m / (|m|_F + eps), then 5 steps of
// A = X X^T, B = b A + (c A) A, X = a X + B X on the wide orientation (X^T when r > c). The
// rounding points are the reference's; only the matmul accumulation differs (see above).
torch::Tensor newton_schulz(const torch::Tensor& matrix, torch::ScalarType compute);

// `stack` [k, r, c] -> [k, r, c]: the same iteration for each matrix, with its own norm, as
// batched matmuls. Equal to newton_schulz on each slice up to the rounding of the norm
// reduction and of the batched kernels.
torch::Tensor newton_schulz_batched(const torch::Tensor& stack, torch::ScalarType compute);

}  // namespace detrain::optim
