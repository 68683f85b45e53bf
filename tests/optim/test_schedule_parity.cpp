// The training schedule against Ultralytics 8.4.190's own trainer (schedule.safetensors from
// tests/golden/gen_schedule.py: real DetectionTrainer runs of 10 iterations per epoch): the lr
// of every group, the momentum, accumulate and whether the optimizer steps at every iteration,
// the lr results.csv logs at each epoch end, and which epochs run mosaic.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "data/loader.h"
#include "model/safetensors.h"
#include "optim/schedule.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::optim;

namespace {

// The same double formulas (numpy.interp, lf) on both sides: a few roundings at most, for
// values of order 1e-2 (2 ulps of 1.0 would already be 4.4e-16).
constexpr double kLrAbs = 1e-17;
constexpr double kMomentumAbs = 4e-16;  // momenta are ~0.9: 2 ulps

void check_case(const model::SafetensorsFile& golden, const std::string& c) {
  INFO("case " << c);
  const auto meta = [&](const std::string& key) {
    return nlohmann::json::parse(golden.metadata.at(c + "." + key));
  };
  const auto settings = meta("settings");
  const auto after = meta("args_after");
  ScheduleSettings s;
  s.epochs = meta("epochs").get<int64_t>();
  s.lrf = settings.at("lrf").get<double>();
  s.cos_lr = settings.value("cos_lr", false);
  s.warmup_epochs = settings.at("warmup_epochs").get<double>();
  s.warmup_momentum = settings.at("warmup_momentum").get<double>();
  s.warmup_bias_lr = after.at("warmup_bias_lr").get<double>();  // auto sets it to 0
  s.momentum = after.at("momentum").get<double>();
  s.nbs = settings.at("nbs").get<int64_t>();
  s.batch = settings.at("batch").get<int64_t>();
  const int64_t nb = meta("nb").get<int64_t>();
  std::vector<GroupSchedule> groups;
  for (const auto& g : meta("groups"))
    groups.push_back({g.at("initial_lr").get<double>(), g.at("name") == "bias"});
  const TrainSchedule schedule(s, nb, groups);
  CHECK(schedule.warmup_iters() == meta("nw").get<int64_t>());
  CHECK(run_accumulate(s, nb) == meta("accumulate_nominal").get<int64_t>());

  const auto lr = golden.at(c + ".lr"), momentum = golden.at(c + ".momentum");
  const auto accumulate = golden.at(c + ".accumulate"), stepped = golden.at(c + ".stepped");
  const bool ramps_momentum = golden.metadata.at(c + ".momentum_key") == "momentum";
  const int64_t iters = lr.size(0);
  REQUIRE(iters == s.epochs * nb);
  int64_t last_step = -1, steps = 0;
  for (int64_t ni = 0; ni < iters; ++ni) {
    INFO("iteration " << ni);
    const auto h = schedule.at(ni / nb, ni % nb);
    for (size_t g = 0; g < groups.size(); ++g)
      CHECK(std::abs(h.lr[g] - lr[ni][g].item<double>()) <= kLrAbs);
    // Adam-type groups keep beta1 (the reference's warmup ramps only a "momentum" key).
    if (ramps_momentum)
      CHECK(std::abs(h.momentum - momentum[ni][0].item<double>()) <= kMomentumAbs);
    CHECK(h.accumulate == accumulate[ni].item<int64_t>());
    const bool step = TrainSchedule::optimizer_step_due(ni, last_step, h.accumulate);
    if (step) last_step = ni, ++steps;
    CHECK(step == stepped[ni].item<bool>());
  }
  CHECK(steps == stepped.sum().item<int64_t>());

  // results.csv: the lr of each epoch's last iteration; mosaic until epochs - close_mosaic.
  const auto end_lr = golden.at(c + ".epoch_end_lr"), mosaic = golden.at(c + ".epoch_mosaic");
  const int64_t close = settings.at("close_mosaic").get<int64_t>();
  for (int64_t e = 0; e < s.epochs; ++e) {
    INFO("epoch " << e);
    const auto h = schedule.at(e, nb - 1);
    for (size_t g = 0; g < groups.size(); ++g)
      CHECK(std::abs(h.lr[g] - end_lr[e][g].item<double>()) <= kLrAbs);
    CHECK(data::mosaic_active(e, s.epochs, close) == mosaic[e].item<bool>());
  }
}

}  // namespace

TEST_CASE("lr momentum accumulate and steps of every iteration equal 8.4.190's trainer",
          "[parity][optim]") {
  const auto golden = model::read_safetensors(test::golden("schedule.safetensors"));
  // a: SGD, 3 epochs, warmup 3 (capped at 2), close_mosaic 1; b: SGD, 5 epochs, warmup 1,
  // close_mosaic 2, cosine; c: optimizer auto (AdamW for this short run).
  for (const char* c : {"a", "b", "c"}) check_case(golden, c);
}
