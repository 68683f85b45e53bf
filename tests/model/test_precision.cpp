// Precision scope (BF16 autocast on CPU) and the BF16 fallback on CPUs without AVX2.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "common/errors.h"
#include "model/precision.h"

using namespace detrain;
using namespace detrain::model;

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
