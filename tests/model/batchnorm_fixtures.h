// Model test fixtures shared by the model tests: BatchNorm states and a probe loss.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "model/heads.h"

namespace detrain::test {

// Random affine BatchNorm parameters and running statistics (seeded), so that eval-mode BN is
// far from the identity a freshly built model has.
void randomize_batchnorm(torch::nn::Module& model, uint64_t seed);

// A scalar that depends on every output of the branches a training forward returns: their
// elements weighted by fixed random numbers (the same for every model compared), so that every
// output element gets a gradient of its own and none saturates (the class logits start near -10).
torch::Tensor probe_loss(const model::TrainOutput& out);

// The largest |gradient| over `module`'s parameters (0 when none has one): the scale of an
// absolute tolerance for gradients that are zero in exact arithmetic.
double largest_gradient(const torch::nn::Module& module);

}  // namespace detrain::test
