// The front end's hand-off: the commands that need LibTorch run in detrain-torch, the full
// executable installed beside `detrain`, which replaces this process (exec: no second process,
// same pid, same argv, so signals, exit codes and job control behave as if it had run here).
#pragma once

#include <string>

namespace detrain::cli {

// <folder of /proc/self/exe>/detrain-torch (the name is DETRAIN_TORCH_EXECUTABLE, set by
// CMakeLists.txt from the target's output name).
std::string torch_executable();

// Execs torch_executable() with `argv`, after setting OpenMP's wait policy for `command`
// (common/openmp_wait.h). Returns only when that fails: the exit code, after one line on stderr
// that names the file and what to do (exit 5, ExitCode::kIo: a file the installation needs).
int hand_off_to_torch(const std::string& command, char** argv);

}  // namespace detrain::cli
