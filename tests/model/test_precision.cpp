// Precision scope (BF16 autocast on CPU), the BF16 fallback on CPUs without AVX2 and the
// train.precision=auto rule.
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

// train.precision=auto on posed machines: the rule's inputs are plain values, so the verdicts
// hold whatever CPU and load the test machine has.
TEST_CASE("precision auto: bf16 where measured faster, fp32 on a busy CPU or one without BF16",
          "[unit][train]") {
  CHECK(parse_precision("auto") == Precision::kAuto);
  CHECK(std::string(precision_name(Precision::kAuto)) == "auto");
  CpuFeatures zen4;
  zen4.x86 = zen4.avx2 = zen4.avx512 = zen4.avx512_bf16 = true;
  AutoPrecisionInputs in;
  in.cpu = zen4;
  in.threads = 2;
  in.load = MachineLoad{0.1, 2};
  PrecisionChoice c = choose_auto_precision(in);
  CHECK(c.precision == Precision::kBf16);
  CHECK(c.reason.find("AVX512-BF16 CPU, idle at start") != std::string::npos);
  // A second process computing on both cores, with the user's thread count: fp32, and the log
  // says why.
  in.load = MachineLoad{2.0, 2};
  c = choose_auto_precision(in);
  CHECK(c.precision == Precision::kFp32);
  CHECK(c.reason.find("busy with other work") != std::string::npos);
  // With the thread count left to the run (runtime.threads=0): BF16 on fewer threads.
  in.threads_follow_load = true;
  c = choose_auto_precision(in);
  CHECK(c.precision == Precision::kBf16);
  CHECK(c.reason.find("busy with other work at start (2.0 other runnable threads on 2 CPUs): "
                      "BF16 on the threads its idle cores hold") != std::string::npos);
  in.threads_follow_load = false;
  // The same neighbour on a 16-CPU machine leaves room for 2 threads.
  in.load = MachineLoad{2.0, 16};
  CHECK(choose_auto_precision(in).precision == Precision::kBf16);
  // Ranks ignore the load (each would see the others starting); CUDA is always bf16.
  in.load = MachineLoad{2.0, 2};
  in.distributed = true;
  CHECK(choose_auto_precision(in).precision == Precision::kBf16);
  in.distributed = false;
  in.cuda = true;
  CHECK(choose_auto_precision(in).precision == Precision::kBf16);
  // x86 without native BF16 (AVX2, or AVX-512 without BF16): fp32 on idle cores too.
  in.cuda = false;
  in.load = MachineLoad{0, 8};
  for (const bool avx512 : {false, true}) {
    in.cpu = CpuFeatures{};
    in.cpu.x86 = in.cpu.avx2 = true;
    in.cpu.avx512 = avx512;
    c = choose_auto_precision(in);
    CHECK(c.precision == Precision::kFp32);
    CHECK(c.reason.find("without native BF16") != std::string::npos);
  }
  in.cpu.amx_bf16 = true;  // AMX without AVX512-BF16 reported (an OS that hides it): bf16
  CHECK(choose_auto_precision(in).precision == Precision::kBf16);
  // x86 without AVX2: fp32 whatever the load.
  in.cpu = CpuFeatures{};
  in.cpu.x86 = true;
  in.load = MachineLoad{0, 8};
  c = choose_auto_precision(in);
  CHECK(c.precision == Precision::kFp32);
  CHECK(c.reason.find("x86 without AVX2") != std::string::npos);
}

TEST_CASE("ONEDNN_MAX_CPU_ISA lowers the CPU features the rules see", "[unit][train]") {
  CpuFeatures sapphire;  // AMX: every level below it too
  sapphire.x86 = sapphire.avx2 = sapphire.avx512 = sapphire.avx512_bf16 = sapphire.amx_bf16 = true;
  CpuFeatures f = cap_to_onednn_isa(sapphire, "avx2");  // case-insensitive, as oneDNN reads it
  CHECK((f.avx2 && !f.avx512 && !f.avx512_bf16 && !f.amx_bf16));
  f = cap_to_onednn_isa(sapphire, "AVX512_CORE");
  CHECK((f.avx512 && !f.avx512_bf16 && !f.amx_bf16));
  CHECK(cpu_isa_name(f) == "AVX-512");
  f = cap_to_onednn_isa(sapphire, "AVX512_CORE_BF16");
  CHECK((f.avx512_bf16 && !f.amx_bf16));
  CHECK(cpu_isa_name(cap_to_onednn_isa(sapphire, "AVX512_CORE_AMX")) == "AMX-BF16");
  f = cap_to_onednn_isa(sapphire, "SSE41");
  CHECK((f.x86 && !f.avx2));
  // No cap, ALL, or a name oneDNN would not know: the CPU as it is. A cap never adds features.
  for (const char* cap : {"", "ALL", "DEFAULT", "AVX9000"})
    CHECK(cpu_isa_name(cap_to_onednn_isa(sapphire, cap)) == "AMX-BF16");
  CHECK(cpu_isa_name(cap_to_onednn_isa(CpuFeatures{}, "AVX512_CORE_AMX")) == "not x86");
  // What train.precision=auto then decides on idle cores: fp32 below native BF16.
  AutoPrecisionInputs in;
  in.threads = 2;
  in.load = MachineLoad{0, 2};
  in.cpu = cap_to_onednn_isa(sapphire, "AVX512_CORE");
  CHECK(choose_auto_precision(in).precision == Precision::kFp32);
  in.cpu = cap_to_onednn_isa(sapphire, "AVX512_CORE_BF16");
  CHECK(choose_auto_precision(in).precision == Precision::kBf16);
}
