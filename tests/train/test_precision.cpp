// Precision scope (BF16 autocast on CPU), gradient clipping with the finite check, and the
// bad-step guard.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "common/errors.h"
#include "train/precision.h"

using namespace detrain;
using namespace detrain::train;

TEST_CASE("bf16 autocast scope on CPU and none for fp32", "[unit][train]") {
  torch::manual_seed(0);
  torch::nn::Linear linear(8, 4);
  const torch::Tensor x = torch::randn({2, 8});  // [2, 8]
  CHECK(parse_precision("bf16") == Precision::kBf16);
  CHECK_THROWS_AS(parse_precision("fp16"), ConfigError);
  {
    AutocastScope scope(Precision::kBf16, torch::Device(torch::kCPU));
    CHECK(scope.active());
    CHECK(compat::autocast_enabled(torch::kCPU));
    CHECK(linear(x).scalar_type() == torch::kBFloat16);
  }
  CHECK_FALSE(compat::autocast_enabled(torch::kCPU));
  {
    AutocastScope scope(Precision::kFp32, torch::Device(torch::kCPU));
    CHECK_FALSE(scope.active());
    CHECK(linear(x).scalar_type() == torch::kFloat);
  }
  // Master weights and their gradients stay fp32 under autocast.
  {
    AutocastScope scope(Precision::kBf16, torch::Device(torch::kCPU));
    linear(x).to(torch::kFloat).sum().backward();
  }
  CHECK(linear->weight.grad().scalar_type() == torch::kFloat);
}

TEST_CASE("bf16 falls back to fp32 only on an x86 CPU without AVX2", "[unit][train]") {
  const torch::Device cpu(torch::kCPU), cuda(torch::kCUDA);
  CHECK(effective_precision(Precision::kFp32, cpu) == Precision::kFp32);
  CHECK(effective_precision(Precision::kFp32, cuda) == Precision::kFp32);
  CHECK(effective_precision(Precision::kBf16, cuda) == Precision::kBf16);
  const Precision on_cpu = effective_precision(Precision::kBf16, cpu);
  CHECK(on_cpu == (compat::cpu_has_fast_bf16_conv() ? Precision::kBf16 : Precision::kFp32));
  CHECK(effective_precision(Precision::kBf16Always, cpu) == Precision::kBf16);
  // The feature test agrees with the kernel's own flags where Linux lists them.
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string w; words >> w;) flags.insert(w);
    break;
  }
  if (flags.empty()) return;  // no /proc/cpuinfo flags here (not Linux x86)
  const bool avx2 = flags.count("avx2") > 0;
  INFO("/proc/cpuinfo avx2: " << avx2);
  CHECK(compat::cpu_has_fast_bf16_conv() == avx2);
}

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
