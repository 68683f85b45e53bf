// See subprocess.h.
#include "common/subprocess.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/errors.h"

extern char** environ;

namespace detrain {

namespace {

// posix_spawn's file actions, released on every path out.
class FileActions {
 public:
  FileActions() { posix_spawn_file_actions_init(&actions_); }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  posix_spawn_file_actions_t* get() { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_;
};

}  // namespace

int start_program(const std::string& program, const std::vector<std::string>& argv,
                  const std::string& output_path) {
  // Opened here rather than by a file action so that a bad path is reported as such, not as
  // a child that failed to start.
  const int out = ::open(output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) throw IoError("cannot open " + output_path + ": " + std::strerror(errno));
  FileActions actions;
  posix_spawn_file_actions_addopen(actions.get(), STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(actions.get(), out, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(actions.get(), out, STDERR_FILENO);

  std::vector<std::string> args = argv;  // posix_spawn wants char* const[]
  std::vector<char*> c_argv;
  for (auto& a : args) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  pid_t pid = -1;
  const int err =
      ::posix_spawn(&pid, program.c_str(), actions.get(), nullptr, c_argv.data(), environ);
  ::close(out);
  if (err != 0) throw IoError("cannot start " + program + ": " + std::strerror(err));
  return pid;
}

int wait_program(int pid, const std::string& program) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw IoError("waiting for " + program + ": " + std::strerror(errno));
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

int run_program(const std::string& program, const std::vector<std::string>& argv,
                const std::string& output_path) {
  return wait_program(start_program(program, argv, output_path), program);
}

}  // namespace detrain
