// Validation progress in each form of train.progress: live (rewritten with '\r', erased when
// done), plain (a line per interval and a final line, nothing rewritten) and off; the final
// line also goes to train.log in every form.
#include <catch2/catch.hpp>
#include <sstream>

#include "common/log.h"
#include "test_support.h"
#include "train/run_log.h"

using namespace detrain;
using detrain::train::ValidationProgress;

namespace {

size_t count(const std::string& text, char c) { return std::count(text.begin(), text.end(), c); }

// 48 images in batches of 8, 2 s per batch.
std::string run(ProgressMode mode, bool is_tty, double interval_s) {
  double now = 0;
  std::ostringstream out;
  {
    ValidationProgress p(mode, interval_s, 48, out, is_tty, [&] { return now; });
    for (int i = 0; i < 6; ++i) {
      now += 2;
      p.add(8);
    }
  }
  return out.str();
}

}  // namespace

TEST_CASE("validation progress texts", "[unit][train]") {
  CHECK(ValidationProgress::line_text(24, 48, 3) == "         validating 24/48 images  50%  00:03");
  CHECK(ValidationProgress::final_text(48, 4) ==
        "         validated 48 images in 00:04 (12.0 images/s)");
}

TEST_CASE("validation progress is plain lines off a terminal and a live line on one",
          "[unit][train]") {
  // Not a terminal (a pipe, CI): plain lines, each ending in '\n', never '\r'.
  const std::string plain = run(ProgressMode::kAuto, /*is_tty=*/false, 5.0);
  CHECK(count(plain, '\r') == 0);
  CHECK(plain ==
        "         validating 24/48 images  50%  00:06\n"
        "         validated 48 images in 00:12 (4.0 images/s)\n");
  // Interval 0: a line per batch but the last, which the final line replaces.
  CHECK(count(run(ProgressMode::kPlain, true, 0), '\n') == 6);

  // A terminal: one line rewritten in place, erased at the end; no final line on screen.
  const std::string live = run(ProgressMode::kAuto, /*is_tty=*/true, 5.0);
  CHECK(count(live, '\n') == 0);
  CHECK(count(live, '\r') == 6 + 2);
  CHECK(live.find("validating 48/48 images") != std::string::npos);
  CHECK(live.find("validated") == std::string::npos);
  CHECK(live.substr(live.size() - 1) == "\r");

  CHECK(run(ProgressMode::kOff, false, 0).empty());
}

TEST_CASE("validation progress cut short clears the live line and says nothing more",
          "[unit][train]") {
  std::ostringstream out;
  {
    ValidationProgress p(ProgressMode::kLive, 30, 48, out, true, [] { return 0.0; });
    p.add(8);
  }
  CHECK(out.str().find("validated") == std::string::npos);
  CHECK(out.str().back() == '\r');
}
