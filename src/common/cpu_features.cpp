// CPU feature tests; see cpu_features.h.
#include "common/cpu_features.h"

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
