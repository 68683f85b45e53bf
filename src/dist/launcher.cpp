// The local launcher; see launcher.h. Ranks are fresh processes (posix_spawn of
// /proc/self/exe), never forks of this one: a fork after LibTorch's OpenMP pool hangs.
#include "dist/launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/errors.h"
#include "dist/requeue.h"

extern char** environ;

namespace detrain::dist {

namespace {

int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw DistributedError("cannot open a socket to pick a free port; set MASTER_PORT");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  if (!ok) throw DistributedError("cannot bind a loopback port; set MASTER_PORT");
  return ntohs(addr.sin_port);
}

// The parent's environment with the launch variables replaced.
std::vector<std::string> rank_environment(int rank, int world, int port) {
  const char* ours[] = {
      "RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "LOCAL_WORLD_SIZE=", "MASTER_ADDR=", "MASTER_PORT="};
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    bool replaced = false;
    for (const char* name : ours) replaced |= std::strncmp(*e, name, std::strlen(name)) == 0;
    if (!replaced) env.emplace_back(*e);
  }
  env.push_back("RANK=" + std::to_string(rank));
  env.push_back("WORLD_SIZE=" + std::to_string(world));
  env.push_back("LOCAL_RANK=" + std::to_string(rank));
  env.push_back("LOCAL_WORLD_SIZE=" + std::to_string(world));
  env.push_back("MASTER_ADDR=127.0.0.1");
  env.push_back("MASTER_PORT=" + std::to_string(port));
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) return fmt::format("was killed by signal {}", WTERMSIG(status));
  return fmt::format("exited with code {}", WEXITSTATUS(status));
}

}  // namespace

int launch_local_ranks(const LaunchOptions& options) {
  if (options.nproc < 1) throw ConfigError("--nproc must be at least 1");
  int port = options.master_port;
  if (port == 0) {
    const char* env_port = std::getenv("MASTER_PORT");
    port = env_port && *env_port ? std::atoi(env_port) : free_loopback_port();
  }
  std::vector<std::string> argv = options.argv;
  if (argv.empty()) throw ConfigError("launcher: empty command line");
  argv[0] = "/proc/self/exe";
  std::vector<pid_t> pids(static_cast<size_t>(options.nproc), -1);
  std::vector<bool> running(pids.size(), false);
  for (int r = 0; r < options.nproc; ++r) {
    std::vector<std::string> env = rank_environment(r, options.nproc, port);
    auto c_argv = c_strings(argv);
    auto c_env = c_strings(env);
    pid_t pid = -1;
    const int err =
        ::posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, c_argv.data(), c_env.data());
    if (err != 0) {
      for (int k = 0; k < r; ++k) ::kill(pids[size_t(k)], SIGTERM);
      throw DistributedError(fmt::format("cannot start rank {}: {}", r, std::strerror(err)));
    }
    pids[size_t(r)] = pid;
    running[size_t(r)] = true;
  }
  spdlog::info("launched {} ranks on 127.0.0.1:{} (pids {})", options.nproc, port,
               fmt::join(pids, ", "));

  int result = 0;
  int alive = options.nproc;
  bool forwarded = false, stopping = false;
  std::chrono::steady_clock::time_point stop_started;
  auto stop_others = [&](int signal) {
    for (size_t k = 0; k < pids.size(); ++k)
      if (running[k]) ::kill(pids[k], signal);
  };
  while (alive > 0) {
    if (options.forward)
      if (const int signal = options.forward->exchange(0)) stop_others(signal);
    if (options.interrupt && options.interrupt->load() && !forwarded) {
      forwarded = true;  // the ranks save a resumable checkpoint together
      stop_others(SIGINT);
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (size_t k = 0; k < pids.size(); ++k) {
        if (pids[k] != pid || !running[k]) continue;
        running[k] = false;
        --alive;
        const int code = exit_code_of(status);
        // A rank that stopped with a checkpoint (130: Ctrl-C, SIGTERM, --max-iterations; 75:
        // the requeue signal) has not failed: the others stop at the same iteration by
        // themselves, and rank 0 may still be requeueing the job.
        const bool stopped = code == 130 || code == kRequeuedExitCode;
        if (code != 0 && result == 0) {
          result = code;
          if (alive > 0 && !forwarded && !stopped) {
            spdlog::error("rank {} (pid {}) {}; stopping the other {} rank(s)", k, pid,
                          describe_status(status), alive);
            stop_others(SIGTERM);
            stopping = true;
            stop_started = std::chrono::steady_clock::now();
          }
        }
      }
      continue;
    }
    if (stopping && std::chrono::steady_clock::now() - stop_started >
                        std::chrono::duration<double>(options.grace_s)) {
      spdlog::error("ranks still running {} s after the failure; killing them", options.grace_s);
      stop_others(SIGKILL);
      stopping = false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return result;
}

}  // namespace detrain::dist
