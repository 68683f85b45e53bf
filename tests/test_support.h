// Helpers shared by tests: locating shared data (skipping visibly when absent; the golden
// fixtures fail instead), running the detrain binary as a user would, and temporary directories.
#pragma once

#include <optional>
#include <string>

namespace detrain::test {

// DETRAIN_DATA or ../shared/data/<sub>. When absent, prints "SKIPPED: <reason>" and, under
// ctest (DETRAIN_CTEST=1), exits with code 4 so ctest reports the test as skipped; otherwise
// returns nullopt and the test returns early.
std::optional<std::string> shared_data_or_skip(const std::string& sub);

// <shared>/golden/<file>. Throws std::runtime_error naming the missing path when it is absent:
// the parity tests fail, never skip, without their fixtures (CI must not pass by skipping them).
std::string golden(const std::string& file);

// Ends the test as skipped (see above) with a visible reason. Returns only outside ctest.
void skip(const std::string& reason);

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs the built detrain binary with `args` (shell-quoted here) from `cwd` (default: source dir).
RunResult run_detrain(const std::string& args, const std::string& cwd = "");
// The built detrain binary's absolute path (for tests that start several processes).
std::string detrain_binary();

// A TCP port on loopback that was free a moment ago (for rendezvous in multi-process tests).
int free_tcp_port();

// The torchrun launcher beside the torch wheel this build uses, or skips (as above) when the
// build's LibTorch came without one (a LibTorch zip rather than the wheel).
std::optional<std::string> torchrun_or_skip();

// A fresh empty directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "detrain");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Writes text to a file (creating parent directories).
void write_text(const std::string& path, const std::string& text);

// Sets an environment variable for the scope (child processes started in it see it too) and
// puts back what was there before, or removes it.
class ScopedEnv {
 public:
  ScopedEnv(const std::string& name, const std::string& value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> before_;
};

}  // namespace detrain::test
