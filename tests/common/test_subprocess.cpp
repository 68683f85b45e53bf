// Running a program without a shell: arguments arrive verbatim (quotes, spaces, $), output
// lands in the named file, exit codes and signals come back as a shell reports them; and the
// scratch folder goes away unless kept.
#include <catch2/catch.hpp>
#include <filesystem>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/scratch_dir.h"
#include "common/subprocess.h"

using namespace detrain;

TEST_CASE("run_program passes argv verbatim and reports the exit code", "[unit][common]") {
  ScratchDir dir("detrain-subprocess-");
  const std::string log = dir.file("out.log");
  CHECK(run_program("/bin/echo", {"echo", "it's", "a b", "$HOME"}, log) == 0);
  CHECK(read_file(log) == "it's a b $HOME\n");
  // stderr goes to the same file; a nonzero exit and a signal come back as a shell shows them.
  CHECK(run_program("/bin/sh", {"sh", "-c", "echo oops >&2; exit 3"}, log) == 3);
  CHECK(read_file(log) == "oops\n");
  CHECK(run_program("/bin/sh", {"sh", "-c", "kill -9 $$"}, log) == 128 + 9);
  CHECK_THROWS_AS(run_program(dir.file("missing"), {"missing"}, log), IoError);
  CHECK_THROWS_AS(run_program("/bin/echo", {"echo"}, dir.file("no/such/dir/log")), IoError);
}

TEST_CASE("scratch folder is removed unless kept", "[unit][common]") {
  std::string removed, kept;
  {
    ScratchDir a("detrain-scratch-");
    write_file_atomic(a.file("x"), "x");
    removed = a.path();
    ScratchDir b("detrain-scratch-");
    b.keep();
    kept = b.path();
    CHECK(removed != kept);
  }
  CHECK_FALSE(std::filesystem::exists(removed));
  CHECK(std::filesystem::exists(kept));
  std::filesystem::remove_all(kept);
}
