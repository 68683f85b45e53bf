// Model test fixtures shared by the model tests.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace detrain::test {

// Random affine BatchNorm parameters and running statistics (seeded), so that eval-mode BN is
// far from the identity a freshly built model has.
void randomize_batchnorm(torch::nn::Module& model, uint64_t seed);

}  // namespace detrain::test
