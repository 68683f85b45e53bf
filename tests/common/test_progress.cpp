// Progress line: text layout, ETA, live rewriting with '\r', interval-limited plain lines,
// quiet mode; and the fixed-width table printer.
#include <catch2/catch.hpp>
#include <sstream>

#include "common/errors.h"
#include "common/progress.h"

using namespace detrain;

namespace {
ProgressState state(int64_t iter) {
  ProgressState s;
  s.epoch = 2;
  s.epochs = 10;
  s.iter = iter;
  s.total = 50;
  s.losses = {{"box", 1.23456}, {"cls", 2.5}};
  s.instances = 37;
  s.imgsz = 640;
  s.images_per_s = 12.34;
  s.data_wait_share = 0.125;
  s.elapsed_s = 2.0 * iter;  // 2 s per iteration
  s.memory_gb = 0.5;
  return s;
}
}  // namespace

TEST_CASE("progress line shows epoch losses speed data share and ETA", "[unit][common]") {
  const std::string line = ProgressLine::line_text(state(10));
  CHECK(line ==
        "     3/10   0.50G    1.2346    2.5000        37   640  10/50  20%  12.3 img/s  "
        "data 12%  00:20<01:20");
  CHECK(ProgressLine::header_text({"box", "cls"}) ==
        "    Epoch     Mem  box_loss  cls_loss Instances  Size");
  // ETA is unknown before the first iteration.
  CHECK(ProgressLine::line_text(state(0)).find("00:00<?") != std::string::npos);
  CHECK(format_duration(3725) == "1:02:05");
  CHECK(format_duration(59.6) == "01:00");
}

TEST_CASE("live progress rewrites one line and plain prints at intervals", "[unit][common]") {
  double now = 0;
  auto clock = [&] { return now; };
  std::ostringstream live_out;
  ProgressLine live(ProgressMode::kAuto, live_out, /*is_tty=*/true, 30.0, clock);
  CHECK(live.mode() == ProgressMode::kLive);
  live.update(state(1));
  now = 0.05;
  live.update(state(2));  // inside the 0.1 s refresh: skipped
  now = 0.2;
  live.update(state(3));
  live.finish(state(50));
  const std::string text = live_out.str();
  CHECK(std::count(text.begin(), text.end(), '\r') == 3);
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
  CHECK(text.back() == '\n');
  CHECK(text.find(" 2/50 ") == std::string::npos);

  now = 0;
  std::ostringstream plain_out;
  ProgressLine plain(ProgressMode::kAuto, plain_out, /*is_tty=*/false, 30.0, clock);
  CHECK(plain.mode() == ProgressMode::kPlain);
  plain.header({"box", "cls"});
  for (int i = 1; i <= 50; ++i) {
    now = 2.0 * i;  // one line at t=2 then every 30 s: t=32, t=62, t=92
    plain.update(state(i));
  }
  plain.finish(state(50));
  const std::string p = plain_out.str();
  CHECK(p.find('\r') == std::string::npos);
  CHECK(std::count(p.begin(), p.end(), '\n') == 1 + 4 + 1);  // header, 4 updates, final

  std::ostringstream off_out;
  ProgressLine off(ProgressMode::kOff, off_out, true, 30.0, clock);
  off.header({"box"});
  off.update(state(1));
  off.finish(state(50));
  CHECK(off_out.str().empty());
}

TEST_CASE("the 100 % line is printed once per epoch", "[unit][common]") {
  // An epoch whose last iteration is also its first line (a one-batch epoch), one whose last
  // update falls after the plain interval (50 iterations of 2 s, a line every 14 s: t = 2, 16,
  // ..., 100 = the 50th), and one where it does not: finish() alone shows the last iteration.
  auto hundred_percent = [](ProgressMode mode, bool is_tty, int64_t total, double interval) {
    double now = 0;
    std::ostringstream out;
    ProgressLine line(mode, out, is_tty, interval, [&] { return now; });
    for (int64_t epoch = 0; epoch < 2; ++epoch) {
      line.header({"box", "cls"});
      ProgressState s = state(0);
      s.epoch = epoch;
      s.total = total;
      for (int64_t i = 1; i <= total; ++i) {
        now += 2.0;
        s.iter = i;
        line.update(s);
      }
      line.finish(s);
    }
    const std::string text = out.str();
    size_t n = 0;
    for (size_t at = text.find("100%"); at != std::string::npos; at = text.find("100%", at + 1))
      ++n;
    return n;
  };
  for (const double interval : {30.0, 14.0}) {
    INFO("interval " << interval);
    CHECK(hundred_percent(ProgressMode::kPlain, false, 1, interval) == 2);  // once per epoch
    CHECK(hundred_percent(ProgressMode::kPlain, false, 50, interval) == 2);
    // Live: the line is drawn at 100 % once too (then ended with '\n'), not redrawn over itself.
    CHECK(hundred_percent(ProgressMode::kLive, true, 50, interval) == 2);
  }
}

TEST_CASE("progress mode parsing names the key", "[unit][common]") {
  CHECK(parse_progress_mode("plain") == ProgressMode::kPlain);
  CHECK(parse_progress_mode("off") == ProgressMode::kOff);
  CHECK_THROWS_WITH(parse_progress_mode("loud", "train.progress"),
                    "config: 'train.progress' is 'loud'; expected auto, live, plain or off");
}

TEST_CASE("fixed-width table aligns columns", "[unit][common]") {
  const std::string table =
      format_table({"Metric", "IoU", "Value"}, {{"AP", "0.50:0.95", "0.512"}, {"AP50", "0.50"}});
  CHECK(table ==
        "Metric        IoU  Value\n"
        "AP      0.50:0.95  0.512\n"
        "AP50         0.50\n");
  CHECK(fixed(0.51249, 3) == "0.512");
  CHECK(fixed(std::nan(""), 3) == "nan");
}
