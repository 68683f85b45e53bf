// The load re-checked while training (train/load_watch): posed loads and a posed clock, so the
// verdicts do not depend on the test machine.
#include <catch2/catch.hpp>
#include <optional>

#include "train/load_watch.h"

using detrain::MachineLoad;
using detrain::train::LoadWatch;

namespace {

const MachineLoad kIdle{0.1, 2};
const MachineLoad kBusy{2.0, 2};

}  // namespace

TEST_CASE("the load watch changes course after two samples call for it", "[unit][train]") {
  LoadWatch watch(/*busy=*/false, /*threads=*/2, /*interval_s=*/60);
  MachineLoad now = kIdle;
  int samples = 0;
  const auto sample = [&]() -> std::optional<MachineLoad> {
    ++samples;
    return now;
  };
  // Before an interval has passed nothing is sampled.
  CHECK_FALSE(watch.poll(30, sample));
  CHECK(samples == 0);
  CHECK_FALSE(watch.poll(60, sample));  // idle, as at start: nothing
  CHECK(samples == 1);
  now = kBusy;
  CHECK_FALSE(watch.poll(90, sample));   // within the interval: not sampled
  CHECK_FALSE(watch.poll(120, sample));  // one busy sample is not enough
  const auto to_busy = watch.poll(180, sample);
  REQUIRE(to_busy);
  CHECK(to_busy->busy);
  CHECK(to_busy->load.other_runnable == 2.0);
  CHECK_THAT(to_busy->reason, Catch::Contains("other work arrived: 2.0 other runnable threads"));
  CHECK(watch.busy());
  CHECK_FALSE(watch.poll(240, sample));  // busy and known to be: nothing to do
  // A blip of idle between busy samples does not switch back.
  now = kIdle;
  CHECK_FALSE(watch.poll(300, sample));
  now = kBusy;
  CHECK_FALSE(watch.poll(360, sample));
  now = kIdle;
  CHECK_FALSE(watch.poll(420, sample));
  const auto to_idle = watch.poll(480, sample);
  REQUIRE(to_idle);
  CHECK_FALSE(to_idle->busy);
  CHECK_THAT(to_idle->reason, Catch::Contains("the other work left"));
  CHECK_FALSE(watch.busy());
}

TEST_CASE("the load watch keeps its course when the load cannot be read", "[unit][train]") {
  LoadWatch watch(/*busy=*/true, /*threads=*/2, /*interval_s=*/1);
  const auto unreadable = []() -> std::optional<MachineLoad> { return std::nullopt; };
  for (double t = 1; t < 10; ++t) CHECK_FALSE(watch.poll(t, unreadable));
  CHECK(watch.busy());
}
