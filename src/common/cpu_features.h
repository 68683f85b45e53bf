// What the CPU offers for BF16 and wide vectors, from the compiler's CPUID tests (x86) — the
// facts behind train.precision=auto and what `bench step` prints. No LibTorch.
#pragma once

#include <string>

namespace detrain {

struct CpuFeatures {
  bool x86 = false;
  bool avx2 = false, avx512 = false, avx512_bf16 = false, amx_bf16 = false;
};

// This CPU's, as oneDNN may use them: ONEDNN_MAX_CPU_ISA (or DNNL_MAX_CPU_ISA), when set, caps
// them as it caps LibTorch's convolutions and matmuls (cap_to_onednn_isa).
CpuFeatures cpu_features();

// oneDNN's ISA cap from the environment: ONEDNN_MAX_CPU_ISA, else DNNL_MAX_CPU_ISA, else "".
std::string onednn_isa_cap();

// `features` lowered to oneDNN's ISA cap `cap` (its names: AVX2, AVX512_CORE, AVX512_CORE_BF16,
// AVX512_CORE_AMX, ...; case-insensitive). Empty, ALL, DEFAULT or an unknown name: unchanged.
CpuFeatures cap_to_onednn_isa(CpuFeatures features, const std::string& cap);

// "AMX-BF16", "AVX512-BF16", "AVX-512", "AVX2", "x86 without AVX2" or "not x86": the best level
// that matters for BF16 and vector kernels.
std::string cpu_isa_name(const CpuFeatures& features);

// /proc/cpuinfo's "model name" with family and model ("AMD EPYC (family 25, model 17)"), or
// "unknown CPU": the CPU a measurement names.
std::string cpu_model_name();

}  // namespace detrain
