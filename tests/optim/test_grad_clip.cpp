// Gradient clipping with the finite check (torch.nn.utils.clip_grad_norm_'s formula).
#include <catch2/catch.hpp>
#include <cmath>

#include "optim/grad_clip.h"

using namespace detrain::optim;

TEST_CASE("gradient clipping matches the clip_grad_norm formula", "[unit][train]") {
  auto a = torch::zeros({2}, torch::requires_grad());
  auto b = torch::zeros({1}, torch::requires_grad());
  auto unused = torch::zeros({3}, torch::requires_grad());  // no gradient: ignored
  a.mutable_grad() = torch::tensor({3.0f, 0.0f});
  b.mutable_grad() = torch::tensor({4.0f});
  // total = sqrt(9 + 16) = 5; max 1 -> scale 1 / (5 + 1e-6)
  const GradNorm n = clip_grad_norm({a, b, unused}, 1.0);
  CHECK(n.total_norm == Approx(5.0).epsilon(1e-7));  // fp32 norms: one fp32 rounding (6e-8)
  CHECK(n.finite);
  CHECK(n.clipped);
  // fp32 product of 3 and the coefficient: relative error one fp32 rounding.
  CHECK(a.grad()[0].item<float>() == Approx(3.0 / (5.0 + 1e-6)).epsilon(1e-6));
  CHECK(b.grad()[0].item<float>() == Approx(4.0 / (5.0 + 1e-6)).epsilon(1e-6));

  // Below the threshold nothing changes.
  b.mutable_grad() = torch::tensor({0.5f});
  a.mutable_grad() = torch::tensor({0.0f, 0.0f});
  const GradNorm small = clip_grad_norm({a, b}, 10.0);
  CHECK_FALSE(small.clipped);
  CHECK(b.grad()[0].item<float>() == 0.5f);

  // A non-finite gradient is reported and left untouched.
  a.mutable_grad() = torch::tensor({NAN, 1.0f});
  b.mutable_grad() = torch::tensor({100.0f});
  const GradNorm bad = clip_grad_norm({a, b}, 1.0);
  CHECK_FALSE(bad.finite);
  CHECK_FALSE(bad.clipped);
  CHECK(b.grad()[0].item<float>() == 100.0f);
  a.mutable_grad() = torch::tensor({INFINITY, 1.0f});
  CHECK_FALSE(clip_grad_norm({a, b}, 1.0).finite);
}
