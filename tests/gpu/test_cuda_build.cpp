// The CUDA build is real on a machine without a GPU: the test binary (linked like detrain) has
// libtorch_cuda loaded, asking CUDA for devices answers instead of crashing, and
// `detrain --version` says what was compiled in.
#include <dlfcn.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "compat/torch_compat.h"
#include "test_support.h"

using namespace detrain;

namespace {

bool library_mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (line.find("/" + name) != std::string::npos) return true;
  return false;
}

bool nvidia_device_present() {
  struct stat st {};
  return ::stat("/dev/nvidia0", &st) == 0;
}

}  // namespace

TEST_CASE("the CUDA build links libtorch_cuda and reports no device without crashing",
          "[unit][cuda-build]") {
#ifdef DETRAIN_WITH_CUDA
  CHECK(library_mapped("libtorch_cuda.so"));
  CHECK(library_mapped("libc10_cuda.so"));
  const bool available = compat::cuda_available();  // loads the CUDA runtime, asks the driver
  const auto version = test::run_detrain("--version");
  INFO(version.output);
  CHECK(version.exit_code == 0);
  CHECK(version.output.find("LibTorch 2.") != std::string::npos);
  if (!nvidia_device_present()) {
    CHECK_FALSE(available);
    CHECK(compat::cuda_device_count() == 0);
    CHECK(compat::cuda_status() == "compiled, no device");
    CHECK(version.output.find("CUDA: compiled, no device") != std::string::npos);
  } else {
    CHECK(version.output.find("CUDA: compiled, ") != std::string::npos);
  }
#else
  CHECK_FALSE(compat::cuda_available());
  CHECK(compat::cuda_status() == "not compiled (CPU build)");
  test::skip("CPU build (DETRAIN_CUDA=OFF): libtorch_cuda is not linked");
#endif
}

TEST_CASE("std:: calls resolve to the system libstdc++, not to copies inside LibTorch",
          "[unit][cuda-build]") {
  // The torch wheel's libtorch.so defines std::filesystem::remove_all and friends; bound to
  // those, TempDir's clean-up crashed (CMakeLists.txt links libstdc++ first to prevent it).
  using RemoveAll = std::uintmax_t (*)(const std::filesystem::path&, std::error_code&);
  const RemoveAll remove_all = &std::filesystem::remove_all;
  Dl_info info{};
  REQUIRE(::dladdr(reinterpret_cast<void*>(remove_all), &info) != 0);
  INFO("std::filesystem::remove_all comes from " << info.dli_fname);
  CHECK(std::string(info.dli_fname).find("libstdc++") != std::string::npos);
  test::TempDir dir;
  test::write_text(dir.file("a/b.txt"), "x");
  std::error_code ec;
  CHECK(std::filesystem::remove_all(dir.file("a"), ec) == 2);
  CHECK_FALSE(ec);
}
