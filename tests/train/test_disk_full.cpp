// `detrain train` on a full disk, as a user meets it: the first checkpoint does not fit, and the
// run ends with exit 5 and one line naming the file and saying "disk full" instead of SIGABRT
// and a LibTorch backtrace; no temporary file is left to keep the disk full. The disk is a
// tmpfs of a few MB where the test may mount one (root), else a file-size limit (ulimit -f,
// with SIGXFSZ ignored so writes fail with EFBIG as they fail with ENOSPC).
#include <sys/mount.h>
#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>

#include "common/errors.h"
#include "test_support.h"
#include "train/train_fixtures.h"

using namespace detrain;
using detrain::test::TempDir;
namespace fs = std::filesystem;

namespace {

detrain::test::RunResult run_shell(const std::string& command) {
  detrain::test::RunResult result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe);
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::vector<std::string> temporaries_under(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos)
      found.push_back(e.path().string());
  return found;
}

// `detrain train` of one epoch on a fresh tiny data set, as a shell command, writing run `name`
// under `project`.
std::string tiny_train_command(const TempDir& dir, const std::string& name,
                               const std::string& project) {
  const auto synth = detrain::test::tiny_synth(dir);
  std::string command = "'" + detrain::test::detrain_binary() + "' train";
  for (const auto& o : detrain::test::tiny_overrides(dir, synth.detect_yaml, name))
    command += " '" + o + "'";
  return command + " 'train.project=" + project + "' train.epochs=1";
}

}  // namespace

TEST_CASE("detrain train on a full disk exits 5 with one line and leaves no temporary",
          "[smoke][train]") {
  TempDir dir;
  const std::string disk = dir.file("disk");
  fs::create_directories(disk);
  const bool tmpfs = ::mount("tmpfs", disk.c_str(), "tmpfs", 0, "size=4m") == 0;
  std::string command = tiny_train_command(dir, "full", disk);
  if (!tmpfs) command = "trap '' XFSZ; ulimit -f 8192; exec " + command;
  const auto r = run_shell(command);
  INFO((tmpfs ? "tmpfs: " : "ulimit -f: ") << r.output);
  const std::string last = disk + "/full/weights/last.ckpt";
  CHECK(r.exit_code == static_cast<int>(ExitCode::kIo));
  CHECK_THAT(r.output, Catch::Contains("detrain: error: cannot write " + last +
                                       ": disk full (free some space and retry)"));
  CHECK(r.output.find("c10::Error") == std::string::npos);
  CHECK(r.output.find("enforce fail") == std::string::npos);
  CHECK(temporaries_under(disk).empty());
  CHECK_FALSE(fs::exists(last));
  if (tmpfs) ::umount(disk.c_str());
}

TEST_CASE("a file-size limit (ulimit -f) ends detrain train with exit 5, not SIGXFSZ",
          "[smoke][train]") {
  TempDir dir;
  // No trap here: detrain itself must ignore SIGXFSZ (8192 blocks: far below one checkpoint).
  const auto r =
      run_shell("ulimit -f 8192; exec " + tiny_train_command(dir, "limit", dir.file("runs")));
  INFO(r.output);
  CHECK(r.exit_code == static_cast<int>(ExitCode::kIo));
  CHECK_THAT(r.output, Catch::Contains("disk full (free some space and retry)"));
  CHECK(temporaries_under(dir.file("runs")).empty());
}
