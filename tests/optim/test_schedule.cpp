// Training schedules against values computed by hand from the reference formulas
// (Ultralytics 8.4.190 engine/trainer.py; numpy/Python rounding is half to even). The
// per-iteration values of whole runs are checked against the reference trainer itself in
// test_schedule_parity.cpp.
#include <catch2/catch.hpp>

#include "common/errors.h"
#include "config/config.h"
#include "optim/schedule.h"

using namespace detrain;
using namespace detrain::optim;
using Catch::Matchers::WithinAbs;

namespace {
// Values of order 1 computed by the code and by the written-out formula differ by a few double
// roundings (about 1e-16 each).
constexpr double kTol = 1e-15;
// Weight decays are about 1e-3: the same few roundings, scaled.
constexpr double kTolDecay = 1e-18;
// cos() adds its own last-bit error to the cosine schedule.
constexpr double kTolCos = 1e-14;
}  // namespace

TEST_CASE("schedule rounding is half to even like Python round", "[unit][optim]") {
  CHECK(round_half_even(2.5) == 2);
  CHECK(round_half_even(3.5) == 4);
  CHECK(round_half_even(0.5) == 0);
  CHECK(round_half_even(2.49) == 2);
  CHECK(round_half_even(2.51) == 3);
  CHECK(round_half_even(-0.5) == 0);
  CHECK(round_half_even(-1.5) == -2);
}

TEST_CASE("numpy interp endpoints and interior", "[unit][optim]") {
  CHECK(numpy_interp(-1, 0, 100, 0.8, 0.937) == 0.8);
  CHECK(numpy_interp(0, 0, 100, 0.8, 0.937) == 0.8);
  CHECK(numpy_interp(100, 0, 100, 0.8, 0.937) == 0.937);  // exact at the right end
  CHECK(numpy_interp(101, 0, 100, 0.8, 0.937) == 0.937);
  // slope (0.937 - 0.8) / 100 times 50 plus 0.8 = 0.8685
  CHECK_THAT(numpy_interp(50, 0, 100, 0.8, 0.937), WithinAbs(0.8685, kTol));
}

TEST_CASE("lr factor linear and cosine with lrf", "[unit][optim]") {
  ScheduleSettings s;
  s.epochs = 100;
  s.lrf = 0.01;
  CHECK(lr_factor(s, 0) == 1.0);
  CHECK_THAT(lr_factor(s, 100), WithinAbs(0.01, kTol));
  // (1 - 50/100) * 0.99 + 0.01 = 0.505
  CHECK_THAT(lr_factor(s, 50), WithinAbs(0.505, kTol));
  // (1 - 1/100) * 0.99 + 0.01 = 0.9901
  CHECK_THAT(lr_factor(s, 1), WithinAbs(0.9901, kTol));
  // past the end it stays at lrf (max(..., 0))
  CHECK_THAT(lr_factor(s, 150), WithinAbs(0.01, kTol));

  s.cos_lr = true;
  CHECK(lr_factor(s, 0) == 1.0);
  CHECK_THAT(lr_factor(s, 100), WithinAbs(0.01, kTol));
  // ((1 - cos(pi/2)) / 2) * (0.01 - 1) + 1 = 0.5 * -0.99 + 1 = 0.505
  CHECK_THAT(lr_factor(s, 50), WithinAbs(0.505, kTol));
  // (1 - cos(pi/4)) / 2 = 0.1464466094067262; * -0.99 + 1 = 0.8550178566873411
  CHECK_THAT(lr_factor(s, 25), WithinAbs(0.8550178566873411, kTolCos));
}

TEST_CASE("warmup length accumulate and weight decay scaling", "[unit][optim]") {
  ScheduleSettings s;                         // 100 epochs, warmup 3 epochs, nbs 64, batch 16
  CHECK(warmup_iterations(s, 20) == 60);      // 3 * 20: no 100-iteration floor in 8.4.190
  CHECK(warmup_iterations(s, 1000) == 3000);  // 3 * 1000
  s.warmup_epochs = 2.5;
  CHECK(warmup_iterations(s, 401) == 1002);  // 1002.5 rounds to even
  CHECK(warmup_iterations(s, 403) == 1008);  // 1007.5 rounds to even
  s.epochs = 3;                              // warmup leaves the last epoch: min(2.5, 2) = 2
  CHECK(warmup_iterations(s, 10) == 20);
  s.epochs = 1;  // min(2.5, 0) = 0: a one-epoch run has no warmup
  CHECK(warmup_iterations(s, 10) == -1);
  s.epochs = 100;
  s.warmup_epochs = 0.01;  // round(0.01 * 20) = 0 iterations: no warmup, not a one-step ramp
  CHECK(warmup_iterations(s, 20) == -1);
  s.warmup_epochs = 0;
  CHECK(warmup_iterations(s, 1000) == -1);

  s.batch = 16;
  CHECK(steady_accumulate(s) == 4);
  CHECK_THAT(scaled_weight_decay(s, 0.0005), WithinAbs(0.0005, kTolDecay));
  s.batch = 24;  // 64 / 24 = 2.67 -> 3; 0.0005 * 24 * 3 / 64 = 0.0005625
  CHECK(steady_accumulate(s) == 3);
  CHECK_THAT(scaled_weight_decay(s, 0.0005), WithinAbs(0.0005625, kTolDecay));
  s.batch = 128;  // 0.5 rounds to 0, then max(., 1); 0.0005 * 128 / 64 = 0.001
  CHECK(steady_accumulate(s) == 1);
  CHECK_THAT(scaled_weight_decay(s, 0.0005), WithinAbs(0.001, kTolDecay));
  s.batch = 128 / 5;  // 25.6 -> 64 / 25 = 2.56 -> 3
  CHECK(steady_accumulate(s) == 3);
}

TEST_CASE("accumulate is capped at the run's iterations, weight decay is not", "[unit][optim]") {
  ScheduleSettings s;
  s.batch = 2;  // nominal accumulate 32
  s.epochs = 3;
  CHECK(steady_accumulate(s) == 32);
  CHECK(run_accumulate(s, 5) == 15);  // 5 batches x 3 epochs
  CHECK(run_accumulate(s, 50) == 32);
  CHECK_THAT(scaled_weight_decay(s, 0.0005), WithinAbs(0.0005, kTolDecay));  // 2 * 32 / 64
  s.warmup_epochs = 0;
  TrainSchedule schedule(s, 5, {{0.01, false}});
  CHECK(schedule.accumulate(0) == 15);
}

TEST_CASE("warmup interpolates lr momentum and accumulate per group", "[unit][optim]") {
  ScheduleSettings s;
  s.epochs = 10;
  s.batch = 16;
  // 20 batches per epoch: nw = 3 * 20 = 60 spans epochs 0..2.
  TrainSchedule schedule(s, 20, {{0.01, false}, {0.01, true}, {0.03, false}});
  CHECK(schedule.warmup_iters() == 60);

  auto h0 = schedule.at(0, 0);
  CHECK(h0.warmup);
  CHECK(h0.lr[0] == 0.0);
  CHECK(h0.lr[1] == 0.1);  // bias groups start at warmup_bias_lr
  CHECK(h0.lr[2] == 0.0);
  CHECK(h0.momentum == 0.8);
  CHECK(h0.accumulate == 1);

  // ni = 1 * 20 + 10 = 30, epoch 1: lf(1) = (1 - 1/10) * 0.99 + 0.01 = 0.901
  auto h = schedule.at(1, 10);
  CHECK(h.warmup);
  // target 0.01 * 0.901 = 0.00901; half way from 0: 0.004505
  CHECK_THAT(h.lr[0], WithinAbs(0.004505, kTol));
  // half way from 0.1 to 0.00901: 0.054505
  CHECK_THAT(h.lr[1], WithinAbs(0.054505, kTol));
  CHECK_THAT(h.lr[2], WithinAbs(0.013515, kTol));
  CHECK_THAT(h.momentum, WithinAbs(0.8685, kTol));
  CHECK(h.accumulate == 2);             // interp 1 -> 4 at 30/60 is 2.5, rounds to even
  CHECK(schedule.accumulate(31) == 3);  // 2.55

  // ni = 60 is the last warmup iteration and lands on the steady values exactly.
  auto hw = schedule.at(3, 0);
  CHECK(hw.warmup);
  // lf(3) = 0.7 * 0.99 + 0.01 = 0.703
  CHECK_THAT(hw.lr[1], WithinAbs(0.00703, kTol));
  CHECK(hw.momentum == 0.937);
  CHECK(hw.accumulate == 4);

  auto after = schedule.at(3, 1);
  CHECK_FALSE(after.warmup);
  CHECK_THAT(after.lr[0], WithinAbs(0.00703, kTol));
  CHECK_THAT(after.lr[2], WithinAbs(0.02109, kTol));
  CHECK(after.momentum == 0.937);
  CHECK(after.accumulate == 4);
  // epoch 9: lf = 0.1 * 0.99 + 0.01 = 0.109
  CHECK_THAT(schedule.at(9, 3).lr[1], WithinAbs(0.00109, kTol));
}

TEST_CASE("no warmup when warmup_epochs is zero", "[unit][optim]") {
  ScheduleSettings s;
  s.epochs = 4;
  s.warmup_epochs = 0;
  s.batch = 8;
  TrainSchedule schedule(s, 5, {{0.02, true}});
  CHECK(schedule.warmup_iters() == -1);
  auto h = schedule.at(0, 0);
  CHECK_FALSE(h.warmup);
  CHECK(h.lr[0] == 0.02);  // lf(0) = 1, no bias warmup
  CHECK(h.momentum == 0.937);
  CHECK(h.accumulate == 8);
}

TEST_CASE("optimizer step rule carries over epoch ends", "[unit][optim]") {
  // accumulate 4 from last step at -1: steps at ni 3, 7, 11, ...
  int64_t last = -1;
  std::vector<int64_t> steps;
  for (int64_t ni = 0; ni < 12; ++ni)
    if (TrainSchedule::optimizer_step_due(ni, last, 4)) {
      steps.push_back(ni);
      last = ni;
    }
  CHECK(steps == std::vector<int64_t>{3, 7, 11});
}

TEST_CASE("end-to-end loss weight schedule", "[unit][optim]") {
  // epochs 10: (1 - e/9) * 0.7 + 0.1
  CHECK_THAT(o2m_weight(0, 10, 0.8, 0.1), WithinAbs(0.8, kTol));
  CHECK_THAT(o2m_weight(3, 10, 0.8, 0.1), WithinAbs(0.7 * 6.0 / 9.0 + 0.1, kTol));  // 0.5667
  CHECK_THAT(o2m_weight(9, 10, 0.8, 0.1), WithinAbs(0.1, kTol));
  CHECK_THAT(o2m_weight(12, 10, 0.8, 0.1), WithinAbs(0.1, kTol));
  // The reference's 3-epoch run logged 0.45 after the first epoch: (1 - 1/2) * 0.7 + 0.1.
  CHECK_THAT(o2m_weight(1, 3, 0.8, 0.1), WithinAbs(0.45, kTol));
  // One epoch: the divisor is max(epochs - 1, 1) = 1, never zero.
  CHECK_THAT(o2m_weight(0, 1, 0.8, 0.1), WithinAbs(0.8, kTol));
  CHECK_THAT(o2m_weight(1, 1, 0.8, 0.1), WithinAbs(0.1, kTol));
}

TEST_CASE("schedule rejects an empty epoch", "[unit][optim]") {
  CHECK_THROWS_AS(TrainSchedule(ScheduleSettings{}, 0, {}), ConfigError);
}

TEST_CASE("schedule settings come from the resolved config", "[unit][optim]") {
  auto resolved = config::resolve("", {"train.epochs=7", "train.cos_lr=true", "data.batch=8",
                                       "optim.momentum=0.9", "train.warmup_epochs=0"});
  const ScheduleSettings s = schedule_settings(resolved.experiment);
  CHECK(s.epochs == 7);
  CHECK(s.cos_lr);
  CHECK(s.batch == 8);
  CHECK(s.momentum == 0.9);
  CHECK(s.warmup_epochs == 0);
  CHECK(s.nbs == 64);
  CHECK(s.lrf == 0.01);
  CHECK(s.warmup_bias_lr == 0.1);
  CHECK(s.warmup_momentum == 0.8);
}
