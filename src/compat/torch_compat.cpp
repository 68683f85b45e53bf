// Version- and build-dependent LibTorch calls; see torch_compat.h. The autocast API is the
// device-generic one of LibTorch >= 2.4 (set_autocast_enabled(device, bool)).
#include "compat/torch_compat.h"

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/autocast_mode.h>
#include <torch/cuda.h>
#include <torch/version.h>

#ifdef DETRAIN_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

#include "common/cpu_features.h"
#include "common/errors.h"

#if TORCH_VERSION_MAJOR < 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 4)
#error "detrain needs LibTorch >= 2.4 (device-generic autocast); see scripts/torch_package.cmake"
#endif

namespace detrain::compat {

bool cuda_available() { return torch::cuda::is_available(); }
int cuda_device_count() { return static_cast<int>(torch::cuda::device_count()); }

std::string cuda_status() {
#ifdef DETRAIN_WITH_CUDA
  const int devices = cuda_available() ? cuda_device_count() : 0;
  return devices > 0 ? "compiled, " + std::to_string(devices) + " device(s)"
                     : std::string("compiled, no device");
#else
  return "not compiled (CPU build)";
#endif
}

torch::Device parse_device(const std::string& text) {
  if (text == "cpu") return torch::Device(torch::kCPU);
  if (text == "cuda" || text.rfind("cuda:", 0) == 0) {
    int index = 0;
    if (text.size() > 5) {
      try {
        size_t used = 0;
        index = std::stoi(text.substr(5), &used);
        if (used != text.size() - 5 || index < 0) throw std::invalid_argument(text);
      } catch (const std::exception&) {
        throw ConfigError("runtime.device = '" + text + "': expected cpu, cuda or cuda:N");
      }
    }
    if (!cuda_available())
      throw ConfigError("runtime.device = '" + text +
                        "': CUDA is not available in this build or on this machine (use cpu)");
    if (index >= cuda_device_count())
      throw ConfigError("runtime.device = '" + text + "': only " +
                        std::to_string(cuda_device_count()) + " CUDA device(s) visible");
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  throw ConfigError("runtime.device = '" + text + "': expected cpu, cuda or cuda:N");
}

bool autocast_enabled(torch::DeviceType device) {
  return at::autocast::is_autocast_enabled(device);
}

namespace {

torch::ScalarType autocast_dtype(torch::DeviceType device) {
  return at::autocast::get_autocast_dtype(device);
}

void set_autocast(torch::DeviceType device, bool enabled, torch::ScalarType dtype) {
  at::autocast::set_autocast_enabled(device, enabled);
  at::autocast::set_autocast_dtype(device, dtype);
}

}  // namespace

AutocastGuard::AutocastGuard(torch::DeviceType device, torch::ScalarType dtype, bool enabled)
    : device_(device),
      previous_enabled_(autocast_enabled(device)),
      previous_dtype_(autocast_dtype(device)) {
  set_autocast(device_, enabled, dtype);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast(device_, previous_enabled_, previous_dtype_);
}

bool cpu_has_fast_bf16_conv() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx2");
#else
  return true;   // other architectures: leave the choice to LibTorch
#endif
}

bool cpu_has_native_bf16_gemm() {
#if defined(__x86_64__) || defined(__i386__)
  // Every CPU with AMX-BF16 has AVX512-BF16 too, which oneDNN uses where the OS withholds AMX.
  // cpu_features honours ONEDNN_MAX_CPU_ISA, which caps the bf16 matmuls as well.
  const CpuFeatures cpu = cpu_features();
  return cpu.avx512_bf16 || cpu.amx_bf16;
#else
  return false;  // unmeasured there: keep the emulated kernel
#endif
}

CpuVectorLevel cpu_vector_level() {
  CpuVectorLevel level;
#if defined(__x86_64__) || defined(__i386__)
  level.x86 = true;
  const std::string capability = at::get_cpu_capability();
  level.avx512 = capability == "AVX512";
  level.avx2 = level.avx512 || capability == "AVX2";
#endif
  return level;
}

void set_num_threads(int threads) { at::set_num_threads(threads); }
int num_threads() { return at::get_num_threads(); }

void synchronize(const torch::Device& device) {
#ifdef DETRAIN_WITH_CUDA
  if (device.is_cuda()) c10::cuda::device_synchronize();
#else
  (void)device;
#endif
}

CudaMemoryStats cuda_memory_stats(const torch::Device& device) {
  CudaMemoryStats stats;
#ifdef DETRAIN_WITH_CUDA
  if (device.is_cuda()) {
    auto s =
        c10::cuda::CUDACachingAllocator::getDeviceStats(device.index() < 0 ? 0 : device.index());
    constexpr size_t kAggregate = 0;  // StatType::AGGREGATE
    stats.allocated_bytes = s.allocated_bytes[kAggregate].current;
    stats.reserved_bytes = s.reserved_bytes[kAggregate].current;
    stats.peak_allocated_bytes = s.allocated_bytes[kAggregate].peak;
    stats.peak_reserved_bytes = s.reserved_bytes[kAggregate].peak;
  }
#else
  (void)device;
#endif
  return stats;
}

void reset_cuda_peak_memory(const torch::Device& device) {
#ifdef DETRAIN_WITH_CUDA
  if (device.is_cuda())
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.index() < 0 ? 0 : device.index());
#else
  (void)device;
#endif
}

std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

}  // namespace detrain::compat
