// runtime.memory_format: the layout of the model's activations and 4-D weights (NCHW, or NHWC,
// which LibTorch calls channels-last), and the rule `auto` follows. The rule is a pure function
// of what the run's device and CPU offer, so tests inject them; model/channels_last.h asks the
// machine and converts modules. No LibTorch here. The reference trains channels-last on CUDA
// only; detrain also does on CPUs where it measured faster: AVX-512
// (docs/perf/2026-12-07-channels-last.md) and AVX2 (LibTorch 2.11 with ATen and oneDNN capped to
// AVX2 on a Zen 4: 0.87-0.89x NCHW, docs/perf/2026-12-07-fused-bn-silu.md).
#pragma once

#include <string>

namespace detrain::model {

enum class MemoryFormat { kNchw, kNhwc };
enum class MemoryFormatChoice { kAuto, kNchw, kNhwc };

// "auto" | "nchw" | "nhwc" (runtime.memory_format); throws ConfigError otherwise.
MemoryFormatChoice parse_memory_format(const std::string& text);
const char* memory_format_name(MemoryFormat format);

// What `auto` looks at: the run's device and, for a CPU run, the vector instructions LibTorch's
// kernels use there (ATen's dispatch level, which ATEN_CPU_CAPABILITY can lower).
struct MemoryFormatHost {
  bool cuda = false;    // the run's device is a CUDA GPU
  bool x86 = false;     // the CPU is x86-64
  bool avx2 = false;    // ... and LibTorch's kernels run at its AVX2 level or above
  bool avx512 = false;  // ... at its AVX-512 level
};

struct MemoryFormatDecision {
  MemoryFormat format = MemoryFormat::kNchw;
  std::string reason;  // "auto: x86 CPU with AVX-512", "runtime.memory_format=nchw"
};

// `choice` on `host`: nchw and nhwc are taken as given; auto picks nhwc on CUDA and on x86 CPUs
// whose kernels run at AVX2 or AVX-512, nchw elsewhere (measured: see the file comment).
MemoryFormatDecision resolve_memory_format(MemoryFormatChoice choice, const MemoryFormatHost& host);

// "nhwc (auto: x86 CPU with AVX-512)": the start-of-run log line's words.
std::string describe(const MemoryFormatDecision& decision);

}  // namespace detrain::model
