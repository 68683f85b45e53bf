// Test helpers; see test_support.h.
#include "test_support.h"

#include <ftw.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

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

std::optional<std::string> golden_or_skip(const std::string& file) {
  auto path = golden_file(file);
  if (!path)
    skip("golden fixture '" + file + "' not found (provide ../shared/golden or DETRAIN_SHARED)");
  return path;
}

std::string detrain_binary() { return DETRAIN_BINARY; }

RunResult run_detrain(const std::string& args, const std::string& cwd) {
  const std::string dir = cwd.empty() ? source_dir() : cwd;
  const std::string command = "cd '" + dir + "' && '" + DETRAIN_BINARY + "' " + args + " 2>&1";
  RunResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.output.append(buffer.data(), n);
  int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

TempDir::TempDir(const std::string& tag) {
  std::random_device rd;
  fs::path p = fs::temp_directory_path() /
               (tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
  fs::create_directories(p);
  path_ = p.string();
}

TempDir::~TempDir() {
  // Not fs::remove_all: the torch wheel's libtorch.so exports its own copy, which the dynamic
  // linker binds here and which crashes (a null call inside it).
  ::nftw(
      path_.c_str(),
      [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }, 16,
      FTW_DEPTH | FTW_PHYS);
}

void write_text(const std::string& path, const std::string& text) {
  fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace detrain::test
