// train.precision=auto re-checked while training (train/precision_watch): posed loads and a
// posed clock, so the verdicts do not depend on the test machine.
#include <catch2/catch.hpp>
#include <optional>

#include "train/precision_watch.h"

using detrain::MachineLoad;
using detrain::train::AutoPrecisionWatch;

namespace {

const MachineLoad kIdle{0.1, 2};
const MachineLoad kBusy{2.0, 2};

}  // namespace

TEST_CASE("auto precision switches after two samples call for the other one", "[unit][train]") {
  AutoPrecisionWatch watch(/*bf16=*/true, /*threads=*/2, /*interval_s=*/60);
  MachineLoad now = kIdle;
  int samples = 0;
  const auto sample = [&]() -> std::optional<MachineLoad> {
    ++samples;
    return now;
  };
  // Before an interval has passed nothing is sampled.
  CHECK_FALSE(watch.poll(30, sample));
  CHECK(samples == 0);
  CHECK_FALSE(watch.poll(60, sample));  // idle: BF16 stays
  CHECK(samples == 1);
  now = kBusy;
  CHECK_FALSE(watch.poll(90, sample));   // within the interval: not sampled
  CHECK_FALSE(watch.poll(120, sample));  // one busy sample is not enough
  const auto to_fp32 = watch.poll(180, sample);
  REQUIRE(to_fp32);
  CHECK_FALSE(to_fp32->bf16);
  CHECK_THAT(to_fp32->reason, Catch::Contains("other work arrived: 2.0 other runnable threads"));
  CHECK_FALSE(watch.bf16());
  CHECK_FALSE(watch.poll(240, sample));  // busy, fp32: nothing to do
  // A blip of idle between busy samples does not switch back.
  now = kIdle;
  CHECK_FALSE(watch.poll(300, sample));
  now = kBusy;
  CHECK_FALSE(watch.poll(360, sample));
  now = kIdle;
  CHECK_FALSE(watch.poll(420, sample));
  const auto to_bf16 = watch.poll(480, sample);
  REQUIRE(to_bf16);
  CHECK(to_bf16->bf16);
  CHECK_THAT(to_bf16->reason, Catch::Contains("the other work left"));
}

TEST_CASE("auto precision keeps its choice when the load cannot be read", "[unit][train]") {
  AutoPrecisionWatch watch(/*bf16=*/false, /*threads=*/2, /*interval_s=*/1);
  const auto unreadable = []() -> std::optional<MachineLoad> { return std::nullopt; };
  for (double t = 1; t < 10; ++t) CHECK_FALSE(watch.poll(t, unreadable));
  CHECK_FALSE(watch.bf16());
}
