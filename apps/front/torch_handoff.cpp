// exec of detrain-torch; see torch_handoff.h.
#include "torch_handoff.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "../cli_shell.h"
#include "common/openmp_wait.h"

namespace detrain::cli {

std::string torch_executable() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (ec ? std::filesystem::path() : self.parent_path()) / DETRAIN_TORCH_EXECUTABLE;
}

int hand_off_to_torch(const std::string& command, char** argv) {
  const std::string exe = torch_executable();
  choose_openmp_wait_for(command.c_str());
  execv(exe.c_str(), argv);  // returns only on failure
  const int error = errno;
  return report(ExitCode::kIo, "`detrain " + command + "` runs in " + exe +
                                   ", which cannot be started (" + std::strerror(error) +
                                   "); install it beside detrain (cmake --build <build> --target " +
                                   DETRAIN_TORCH_EXECUTABLE + " builds it)");
}

}  // namespace detrain::cli
