// The only place that knows LibTorch's version- and build-dependent API (autocast, thread
// defaults, CUDA queries and memory statistics, c10d's backend class). detrain builds against
// LibTorch >= 2.4 (scripts/torch_package.cmake refuses older ones); CUDA parts compile when
// DETRAIN_WITH_CUDA is set and answer "no CUDA" otherwise.
#pragma once

#include <torch/types.h>
#include <torch/version.h>

#include <cstdint>
#include <string>

namespace c10d {
class Backend;
}  // namespace c10d

namespace detrain::compat {

// The class c10d's Gloo and NCCL process groups derive from (collective calls allreduce,
// broadcast, barrier, each returning a Work).
using CollectiveBackend = c10d::Backend;

// True when LibTorch was built with CUDA and a device is visible.
bool cuda_available();
int cuda_device_count();

// What `detrain --version` says of CUDA: "compiled, N device(s)", "compiled, no device" or
// "not compiled (CPU build)".
std::string cuda_status();

// Parses "cpu", "cuda", "cuda:N". Throws ConfigError naming the value when it is malformed or
// names a device that is not there.
torch::Device parse_device(const std::string& text);

// Autocast (mixed precision) for one device type, restored on scope exit. Mirrors Python's
// `with torch.autocast(device_type, dtype)`. Non-copyable.
class AutocastGuard {
 public:
  AutocastGuard(torch::DeviceType device, torch::ScalarType dtype, bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  torch::DeviceType device_;
  bool previous_enabled_;
  torch::ScalarType previous_dtype_;
};

bool autocast_enabled(torch::DeviceType device);

// True where BF16 autocast trains at least as fast as fp32 on this processor: x86 with AVX2.
// Measured with LibTorch 2.11 on an AVX2-only AMD EPYC, fresh processes A B B A
// (docs/perf/2026-12-01-libtorch-2.11-vs-1.13.md): a yolo26n step takes 0.86x fp32's time at
// 640 px batch 4 and 0.91x at 320 px batch 8 (LibTorch 1.13 there: the same as fp32). Without
// AVX2 (unmeasured) BF16 is assumed slow and the run falls back to fp32.
bool cpu_has_fast_bf16_conv();

// The CPU as the memory-format rule sees it (model/memory_format.h): whether it is x86-64, and
// whether LibTorch's CPU kernels run at their AVX-512 level here. That level is ATen's dispatch
// choice (at::get_cpu_capability), so ATEN_CPU_CAPABILITY=avx2 lowers it as it lowers the
// kernels; oneDNN's own cap (ONEDNN_MAX_CPU_ISA) is read by cpu_features, not here.
struct CpuVectorLevel {
  bool x86 = false;
  bool avx2 = false;  // AVX2 or AVX-512
  bool avx512 = false;
};
CpuVectorLevel cpu_vector_level();

// True where the CPU multiplies bf16 matrices in hardware, so that LibTorch's bf16 matmuls
// (oneDNN's brgemm) beat detrain's fp32 kernel with emulated bf16 roundings: x86 with
// AVX512-BF16 or AMX-BF16. Measured on an AMD EPYC Zen 4 (AVX512-BF16), yolo26n's
// Newton-Schulz: native bf16 about half the emulated kernel's time; with oneDNN capped to
// AVX512 without BF16 about 2.5x, and to AVX2 about 17x, slower than emulated
// (docs/perf/2026-12-07-newton-schulz-native-bf16.md). Other architectures: false (unmeasured;
// the emulated kernel is the measured and exact one).
bool cpu_has_native_bf16_gemm();

// Intra-op threads; set from the config, never left to LibTorch's default (which has changed
// between versions).
void set_num_threads(int threads);
int num_threads();

// Waits for queued CUDA work (no-op on CPU or without CUDA).
void synchronize(const torch::Device& device);

// Peak bytes allocated / reserved by the CUDA caching allocator since the last reset
// (0 without CUDA).
struct CudaMemoryStats {
  int64_t allocated_bytes = 0;
  int64_t reserved_bytes = 0;
  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
};
CudaMemoryStats cuda_memory_stats(const torch::Device& device);
void reset_cuda_peak_memory(const torch::Device& device);

// "2.11.0"
std::string torch_version();

}  // namespace detrain::compat
