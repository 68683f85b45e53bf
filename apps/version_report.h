// `detrain --version`: the build's identity and what it was built with, in three lines. The
// front end knows LibTorch's and OpenCV's versions from the build (CMakeLists.txt passes them)
// without loading either; only detrain-torch can ask CUDA for its devices (docs/architecture.md,
// "Two executables").
#pragma once

#include <string>

namespace detrain::cli {

// "detrain <version> (<git describe>)", `libtorch_line`, and the OpenCV / cores line.
std::string version_report(const std::string& libtorch_line);

// "LibTorch <version>, CUDA: <status>; built with CUDA <toolkit version>" (no last part when the
// build has no CUDA).
std::string libtorch_line(const std::string& torch_version, const std::string& cuda_status);

// The LibTorch line without loading LibTorch: the version it was built against, and for a CUDA
// build "compiled, no device" when the machine has no NVIDIA device node (/dev/nvidia0: CUDA can
// open no device without one), else the device nodes it has and where to ask CUDA itself.
std::string built_libtorch_line();

}  // namespace detrain::cli
