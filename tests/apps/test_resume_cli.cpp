// `detrain train --resume` of a file that cannot be resumed, run as a user would: the message
// names the file and what it is (never a missing args.yaml the user did not name), exit 6 as
// for every checkpoint error (README, exit codes).
#include <catch2/catch.hpp>
#include <fstream>
#include <random>

#include "common/errors.h"
#include "test_support.h"

using namespace detrain;

TEST_CASE("--resume of a corrupt checkpoint outside a run names the file, exit 6",
          "[smoke][cli][train]") {
  test::TempDir dir;
  {
    std::ofstream out(dir.file("x.ckpt"), std::ios::binary);
    std::mt19937 rng(3);
    for (int i = 0; i < 1000; ++i) out.put(static_cast<char>(rng()));
  }
  const auto r = test::run_detrain("train --resume " + dir.file("x.ckpt"));
  INFO(r.output);
  CHECK(r.exit_code == static_cast<int>(ExitCode::kModel));
  CHECK(r.output.find(dir.file("x.ckpt")) != std::string::npos);
  CHECK(r.output.find("args.yaml") == std::string::npos);
}
