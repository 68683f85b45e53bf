// The bench timing runner with fake callables and a fake clock: the A B B A order, warm-up
// rounds dropped, per-variant min/median/max and the ratio of medians.
#include <catch2/catch.hpp>

#include "bench/abba.h"

using namespace detrain::bench;

TEST_CASE("abba order reverses every other round", "[unit][bench]") {
  CHECK(abba_order(2, 4) == std::vector<size_t>{0, 1, 1, 0, 0, 1, 1, 0});
  CHECK(abba_order(3, 2) == std::vector<size_t>{0, 1, 2, 2, 1, 0});
  CHECK(abba_order(1, 3) == std::vector<size_t>{0, 0, 0});
}

TEST_CASE("abba runner times each variant in order and compares medians", "[unit][bench]") {
  // A fake clock that each timed call advances by its variant's cost; B costs 3x A, and a
  // drifting "load" adds 1 ms per call, which the alternation spreads over both.
  double now = 0;
  int calls = 0;
  std::vector<std::string> log;
  const auto variant = [&](const std::string& name, double cost) {
    return Variant{name, [&log, name](int) { log.push_back("prep " + name); },
                   [&, name, cost](int round) {
                     log.push_back(name + std::to_string(round));
                     now += cost + calls++;
                   }};
  };
  const AbbaResult r = run_abba({variant("A", 10), variant("B", 30)}, {1, 4}, [&] { return now; });
  CHECK(r.order == std::vector<size_t>{0, 1, 1, 0, 0, 1, 1, 0, 0, 1});
  REQUIRE(log.size() == 20);
  CHECK(log[0] == "prep A");  // untimed preparation right before each timed call
  CHECK(log[1] == "A0");
  CHECK(log[3] == "B0");
  CHECK(log[5] == "B1");
  // Warm-up round (calls 0 and 1) dropped; A ran at calls 3, 4, 7, 8, B at 2, 5, 6, 9.
  CHECK(r.ms[0] == std::vector<double>{13, 14, 17, 18});
  CHECK(r.ms[1] == std::vector<double>{32, 35, 36, 39});
  CHECK(r.timings[0].min_ms == 13);
  CHECK(r.timings[0].median_ms == 17);  // the upper median of an even count
  CHECK(r.timings[0].max_ms == 18);
  CHECK(r.timings[1].median_ms == 36);
  CHECK(r.ratio(1, 0) == Approx(36.0 / 17.0));
  CHECK(r.names == std::vector<std::string>{"A", "B"});
}

TEST_CASE("time_repeats is the one-variant case: warm-up then repeats", "[unit][bench]") {
  double now = 0;
  int runs = 0;
  const Timing t = time_repeats(
      3, [&] { now += ++runs; }, 1, [&] { return now; });
  CHECK(runs == 4);
  CHECK(t.min_ms == 2);
  CHECK(t.median_ms == 3);
  CHECK(t.max_ms == 4);
  CHECK(summarize({}).median_ms == 0);
}
