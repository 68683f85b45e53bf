// See requeue.h. scontrol is started with posix_spawnp (never a fork of a process that runs
// LibTorch's thread pools).
#include "dist/requeue.h"

#include <signal.h>
#include <spawn.h>
#include <spdlog/fmt/fmt.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <vector>

extern char** environ;

namespace detrain::dist {

int requeue_signal_number(const std::string& name) {
  if (name == "SIGUSR1") return SIGUSR1;
  if (name == "SIGUSR2") return SIGUSR2;
  return 0;
}

std::string requeue_slurm_job(const std::string& job_id) {
  std::string program = "scontrol", verb = "requeue", id = job_id;
  std::vector<char*> argv{program.data(), verb.data(), id.data(), nullptr};
  pid_t pid = -1;
  const int err = ::posix_spawnp(&pid, "scontrol", nullptr, nullptr, argv.data(), environ);
  if (err != 0) return fmt::format("cannot run scontrol: {}", std::strerror(err));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return fmt::format("waiting for scontrol: {}", std::strerror(errno));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  if (WIFSIGNALED(status)) return fmt::format("scontrol was killed by signal {}", WTERMSIG(status));
  return fmt::format("scontrol requeue {} exited with code {}", job_id, WEXITSTATUS(status));
}

}  // namespace detrain::dist
