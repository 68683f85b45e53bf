// Test helpers; see test_support.h.
#include "test_support.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <stdexcept>

#include "common/paths.h"

namespace detrain::test {
namespace fs = std::filesystem;

void skip(const std::string& reason) {
  std::cout << "SKIPPED: " << reason << std::endl;
  if (const char* ctest = std::getenv("DETRAIN_CTEST"); ctest && std::string(ctest) == "1")
    std::exit(4);
}

std::optional<std::string> shared_data_or_skip(const std::string& sub) {
  auto root = shared_data_root();
  if (root) {
    fs::path p = fs::path(*root) / sub;
    if (fs::exists(p)) return p.string();
  }
  skip("shared data '" + sub + "' not found (set DETRAIN_DATA or provide ../shared/data)");
  return std::nullopt;
}

std::string golden(const std::string& file) {
  const char* env = std::getenv("DETRAIN_GOLDEN");
  const fs::path path = fs::path(env && *env ? env : DETRAIN_GOLDEN_DIR) / file;
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return path.string();
  throw std::runtime_error("golden fixture " + path.string() +
                           " is missing; the build generates it with tests/golden/generate.py "
                           "in .venv-ref (Ultralytics 8.4.190): run scripts/setup.sh, then build "
                           "again");
}

std::string reference_python() { return DETRAIN_REF_PYTHON; }

std::string detrain_binary() { return DETRAIN_BINARY; }

int free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::optional<std::string> torchrun_or_skip() {
  const std::string path = DETRAIN_TORCHRUN;
  if (!path.empty() && fs::exists(path)) return path;
  skip("no torchrun beside this build's LibTorch (" + path + "); build against the torch wheel");
  return std::nullopt;
}

RunResult run_command(const std::string& command) {
  RunResult result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.output.append(buffer.data(), n);
  int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

RunResult run_detrain(const std::string& args, const std::string& cwd) {
  const std::string dir = cwd.empty() ? source_dir() : cwd;
  return run_command("cd '" + dir + "' && '" + DETRAIN_BINARY + "' " + args);
}

std::string test_venv() {
  const char* env = std::getenv("DETRAIN_TEST_VENV");
  return env && *env ? env : source_dir() + "/.venv-test";
}

ScopedEnv::ScopedEnv(const std::string& name, const std::string& value) : name_(name) {
  if (const char* v = std::getenv(name.c_str())) before_ = v;
  ::setenv(name.c_str(), value.c_str(), 1);
}

ScopedEnv::~ScopedEnv() {
  if (before_)
    ::setenv(name_.c_str(), before_->c_str(), 1);
  else
    ::unsetenv(name_.c_str());
}

TempDir::TempDir(const std::string& tag) {
  std::random_device rd;
  fs::path p = fs::temp_directory_path() /
               (tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
  fs::create_directories(p);
  path_ = p.string();
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

void write_text(const std::string& path, const std::string& text) {
  fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace detrain::test
