// --version text; see version_report.h. DETRAIN_TORCH_VERSION and DETRAIN_OPENCV_VERSION come
// from the CMake packages this build found (CMakeLists.txt), the same that the binaries link.
#include "version_report.h"

#include <algorithm>
#include <filesystem>

#include "common/cores.h"
#include "common/version.h"

namespace detrain::cli {

namespace {

// NVIDIA's character devices for GPUs: /dev/nvidia0, /dev/nvidia1, ... (not nvidiactl, -uvm).
int nvidia_device_nodes() {
  std::error_code ec;
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/dev", ec)) {
    const std::string name = entry.path().filename().string();
    const bool digits = name.size() > 6 && std::all_of(name.begin() + 6, name.end(),
                                                       [](char c) { return c >= '0' && c <= '9'; });
    count += name.rfind("nvidia", 0) == 0 && digits;
  }
  return count;
}

}  // namespace

std::string libtorch_line(const std::string& torch_version, const std::string& cuda_status) {
  // DETRAIN_CUDA_VERSION: the CUDA toolkit LibTorch's CMake package reported ("" if none).
  const std::string built = DETRAIN_CUDA_VERSION;
  return "LibTorch " + torch_version + ", CUDA: " + cuda_status +
         (built.empty() ? "" : "; built with CUDA " + built);
}

std::string built_libtorch_line() {
#ifdef DETRAIN_WITH_CUDA
  const int nodes = nvidia_device_nodes();
  const std::string cuda = nodes == 0
                               ? std::string("compiled, no device")
                               : "compiled, " + std::to_string(nodes) +
                                     " NVIDIA device node(s) (detrain-torch --version asks CUDA)";
#else
  const std::string cuda = "not compiled (CPU build)";
#endif
  return libtorch_line(DETRAIN_TORCH_VERSION, cuda);
}

std::string version_report(const std::string& libtorch) {
  return std::string("detrain ") + version_string() + " (" + git_describe() + ")\n" + libtorch +
         "\nOpenCV " + DETRAIN_OPENCV_VERSION + ", " + std::to_string(usable_cores()) +
         " core(s); runtime.threads=0 uses all of them";
}

}  // namespace detrain::cli
