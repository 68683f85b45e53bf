// CPU feature tests; see cpu_features.h.
#include "common/cpu_features.h"

#include <cctype>
#include <cstdlib>
#include <fstream>

namespace detrain {

CpuFeatures cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  f.x86 = true;
  f.avx2 = __builtin_cpu_supports("avx2");
  f.avx512 = __builtin_cpu_supports("avx512f");
  f.avx512_bf16 = __builtin_cpu_supports("avx512bf16");
  f.amx_bf16 = __builtin_cpu_supports("amx-bf16");
#endif
  return cap_to_onednn_isa(f, onednn_isa_cap());
}

std::string onednn_isa_cap() {
  for (const char* name : {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"})
    if (const char* cap = std::getenv(name)) return cap;
  return "";
}

CpuFeatures cap_to_onednn_isa(CpuFeatures f, const std::string& cap) {
  std::string name;
  for (const char c : cap) name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  // oneDNN's x86 levels, lowest first, with what each one still allows here.
  struct Level {
    const char* name;
    bool avx2, avx512, avx512_bf16, amx_bf16;
  };
  static constexpr Level kLevels[] = {
      {"SSE41", false, false, false, false},
      {"AVX", false, false, false, false},
      {"AVX2", true, false, false, false},
      {"AVX2_VNNI", true, false, false, false},
      {"AVX2_VNNI_2", true, false, false, false},
      {"AVX512_CORE", true, true, false, false},
      {"AVX512_CORE_VNNI", true, true, false, false},
      {"AVX512_CORE_BF16", true, true, true, false},
      {"AVX512_CORE_FP16", true, true, true, false},
      {"AVX10_1_512", true, true, true, false},
      {"AVX512_CORE_AMX", true, true, true, true},
      {"AVX512_CORE_AMX_FP16", true, true, true, true},
      {"AVX10_1_512_AMX", true, true, true, true},
      {"AVX10_1_512_AMX_FP16", true, true, true, true},
  };
  for (const Level& level : kLevels) {
    if (name != level.name) continue;
    f.avx2 = f.avx2 && level.avx2;
    f.avx512 = f.avx512 && level.avx512;
    f.avx512_bf16 = f.avx512_bf16 && level.avx512_bf16;
    f.amx_bf16 = f.amx_bf16 && level.amx_bf16;
  }
  return f;
}

std::string cpu_isa_name(const CpuFeatures& f) {
  if (!f.x86) return "not x86";
  if (f.amx_bf16) return "AMX-BF16";
  if (f.avx512_bf16) return "AVX512-BF16";
  if (f.avx512) return "AVX-512";
  if (f.avx2) return "AVX2";
  return "x86 without AVX2";
}

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, name, family, model;
  const auto value = [&line] {
    const size_t start = line.find_first_not_of(' ', line.find(':') + 1);
    return line.find(':') == std::string::npos || start == std::string::npos ? std::string()
                                                                             : line.substr(start);
  };
  while (std::getline(cpuinfo, line) && line != "") {
    if (line.rfind("model name", 0) == 0)
      name = value();
    else if (line.rfind("cpu family", 0) == 0)
      family = value();
    else if (line.rfind("model\t", 0) == 0)
      model = value();
  }
  if (name.empty()) return "unknown CPU";
  return family.empty() ? name : name + " (family " + family + ", model " + model + ")";
}

}  // namespace detrain
