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

// True when LibTorch's CPU convolutions take oneDNN's bf16 kernels on this processor. LibTorch
// sends a bf16 convolution to oneDNN only when the CPU has AVX-512 BW, VL
// and DQ; without them it runs the reference im2col + scalar-gemm kernel (_slow_conv2d_*, once
// per group), 16-32x slower than fp32 for a yolo26n step on an AVX2-only AMD EPYC (issue 8).
bool cpu_has_fast_bf16_conv();

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
