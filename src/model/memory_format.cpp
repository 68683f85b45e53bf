// runtime.memory_format and the auto rule; see memory_format.h.
#include "model/memory_format.h"

#include "common/errors.h"

namespace detrain::model {

MemoryFormatChoice parse_memory_format(const std::string& text) {
  if (text == "auto") return MemoryFormatChoice::kAuto;
  if (text == "nchw") return MemoryFormatChoice::kNchw;
  if (text == "nhwc") return MemoryFormatChoice::kNhwc;
  throw ConfigError("config: runtime.memory_format is '" + text + "'; expected auto, nchw or nhwc");
}

const char* memory_format_name(MemoryFormat format) {
  return format == MemoryFormat::kNhwc ? "nhwc" : "nchw";
}

MemoryFormatDecision resolve_memory_format(MemoryFormatChoice choice,
                                           const MemoryFormatHost& host) {
  switch (choice) {
    case MemoryFormatChoice::kNchw:
      return {MemoryFormat::kNchw, "runtime.memory_format=nchw"};
    case MemoryFormatChoice::kNhwc:
      return {MemoryFormat::kNhwc, "runtime.memory_format=nhwc"};
    case MemoryFormatChoice::kAuto:
      break;
  }
  if (host.cuda) return {MemoryFormat::kNhwc, "auto: CUDA"};
  if (host.x86 && host.avx512) return {MemoryFormat::kNhwc, "auto: x86 CPU with AVX-512"};
  if (host.x86 && host.avx2) return {MemoryFormat::kNhwc, "auto: x86 CPU with AVX2"};
  if (host.x86) return {MemoryFormat::kNchw, "auto: x86 CPU without AVX2"};
  return {MemoryFormat::kNchw, "auto: not an x86 CPU"};
}

std::string describe(const MemoryFormatDecision& decision) {
  return std::string(memory_format_name(decision.format)) + " (" + decision.reason + ")";
}

}  // namespace detrain::model
