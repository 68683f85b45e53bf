// Parameter groups and the optimizer factory: every model's groups match Ultralytics 8.4.190's
// (param_groups.json), yolo26n's MuSGD buckets the model census (126 matrices, 42 keys), decay
// scales with batch * accumulate / nbs, lr multipliers, the auto rule, and refused config values.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "model/builder.h"
#include "model/safetensors.h"
#include "model/yolo_model.h"
#include "optim/musgd.h"
#include "optim/musgd_census.h"
#include "optim/optimizer_factory.h"
#include "optim/param_groups.h"
#include "test_support.h"
#include "yolo26n_params.h"

using namespace detrain;
using namespace detrain::optim;

namespace {

config::OptimOptions musgd_options() {
  config::OptimOptions o;
  o.optimizer = "musgd";
  return o;
}

}  // namespace

TEST_CASE("yolo26n groups: sizes, lr and decay as the reference builds them",
          "[unit][param_groups]") {
  const auto groups = build_param_groups(test::yolo26n_params(), {true, 0.01, 3.0, 5e-4});
  REQUIRE(groups.size() == 8);
  // reference-yolo.md 2.4 and golden README 5: 0/0 weight, 24/90 bn, 30/96 bias, 30/96 muon.
  const std::vector<size_t> sizes{0, 0, 24, 90, 30, 96, 30, 96};
  const std::vector<std::string> names{"weight_cls", "weight", "bn_cls",   "bn",
                                       "bias_cls",   "bias",   "muon_cls", "muon"};
  for (int g = 0; g < 8; ++g) {
    INFO("group " << g);
    CHECK(groups[g].names.size() == sizes[g]);
    CHECK(groups[g].name == names[g]);
    CHECK(groups[g].lr == (g % 2 == 0 ? 0.01 * 3.0 : 0.01));
    CHECK(groups[g].weight_decay == (g < 2 || g >= 6 ? 5e-4 : 0.0));
  }
  // Without Muon (SGD, AdamW) the reference's three groups weight, bn, bias: the 126 matrices
  // are decayed weights and no group is boosted.
  const auto plain = build_param_groups(test::yolo26n_params(), {false, 0.01, 3.0, 5e-4});
  REQUIRE(plain.size() == 3);
  CHECK(plain[0].name == "weight");
  CHECK(plain[0].names.size() == 126);
  CHECK(plain[1].names.size() == 114);
  CHECK(plain[2].names.size() == 126);
  CHECK(plain[0].lr == 0.01);
  CHECK(plain[2].lr == 0.01);
  CHECK(plain[0].weight_decay == 5e-4);
  CHECK(plain[1].weight_decay == 0.0);
}

// Every parameter of every model lands in the group, with the lr multiplier, that Ultralytics
// 8.4.190's build_optimizer gives it (param_groups.json from tests/golden/gen_groups.py), for
// SGD (3 groups), AdamW (3) and MuSGD (8, the head's cv3 / one2one_cv3 at 3x lr). The one
// difference: frozen parameters (the DFL projection) are in no group here, in a group there.
TEST_CASE("every model's groups equal Ultralytics 8.4.190's for SGD, AdamW and MuSGD",
          "[parity][param_groups]") {
  std::ifstream in(test::golden("param_groups.json"));
  const auto golden = nlohmann::json::parse(in);
  int models = 0;
  for (const auto& [model_name, by_optimizer] : golden.items()) {
    if (model_name == "__metadata__") continue;
    ++models;
    model::BuildOptions build;
    build.arch = model_name;
    build.nc = model_name.find("pose") != std::string::npos ? 1 : 80;
    model::YoloModel yolo(build);
    const auto infos = yolo->param_infos();
    for (const auto& [optimizer, reference] : by_optimizer.items()) {
      INFO(model_name << " " << optimizer);
      const bool muon = optimizer == "MuSGD";
      const auto groups = build_param_groups(infos, {muon, 0.01, 3.0, 5e-4});
      REQUIRE(groups.size() == reference.at("groups").size());
      std::map<std::string, const ParamGroup*> ours;
      for (const auto& g : groups)
        for (const auto& name : g.names) ours[name] = &g;
      size_t checked = 0;
      for (const auto& row : reference.at("params")) {
        const auto name = row[0].get<std::string>();
        INFO(name);
        if (name.find(".dfl") != std::string::npos) {
          CHECK(ours.count(name) == 0);  // frozen here
          continue;
        }
        REQUIRE(ours.count(name));
        CHECK(ours[name]->index == row[1].get<int>());
        CHECK(ours[name]->name.rfind(row[2].get<std::string>(), 0) == 0);
        CHECK(ours[name]->lr == Approx(0.01 * row[3].get<double>()).epsilon(1e-12));
        ++checked;
      }
      CHECK(checked == ours.size());
    }
  }
  CHECK(models == 6);
}

TEST_CASE("MuSGD's buckets on yolo26n match the model census", "[unit][param_groups]") {
  const auto infos = test::yolo26n_params();
  const auto census = optim::census(infos);
  const auto opt = build_optimizer(infos, musgd_options(), {});
  const auto* musgd = dynamic_cast<const MuSGD*>(opt.get());
  REQUIRE(musgd);
  // reference-yolo.md section 7: 126 matrices in 42 (group, shape) keys.
  CHECK(musgd->muon_matrices() == 126);
  CHECK(musgd->matrix_keys().size() == 42);
  CHECK(census.matrices == musgd->muon_matrices());
  CHECK(census.keys == static_cast<int64_t>(musgd->matrix_keys().size()));
  std::map<std::pair<size_t, std::vector<int64_t>>, int64_t> ours, theirs;
  size_t stacked = 0;
  for (const auto& k : musgd->matrix_keys()) {
    ours[{k.group, k.shape}] = k.count;
    if (k.count >= 2) ++stacked;
  }
  for (const auto& k : census.buckets) theirs[{static_cast<size_t>(k.group), k.shape}] = k.count;
  CHECK(ours == theirs);
  CHECK(musgd->stacked_buckets() == stacked);
  CHECK(opt->num_groups() == 8);
  CHECK(opt->group_name(6) == "muon_cls");
}

TEST_CASE("Weight decay scales with batch * accumulate / nbs", "[unit][param_groups]") {
  // reference-yolo.md 5: batch 16 -> unchanged; batch 128 (accumulate 1) -> doubled.
  CHECK(batch_scaled_decay(5e-4, 16, 4, 64) == Approx(5e-4).epsilon(1e-15));
  CHECK(batch_scaled_decay(5e-4, 128, 1, 64) == Approx(1e-3).epsilon(1e-15));
  CHECK(batch_scaled_decay(5e-4, 8, 8, 64) == Approx(5e-4).epsilon(1e-15));
}

TEST_CASE("optimizer=auto follows the reference's rule", "[unit][param_groups]") {
  config::OptimOptions o;  // optimizer auto
  const auto long_run = choose_optimizer(o, 10001, 80);
  CHECK(long_run.kind == "musgd");
  CHECK(long_run.lr0 == 0.01);
  CHECK(long_run.momentum == 0.9);
  CHECK(long_run.automatic);
  const auto short_run = choose_optimizer(o, 10000, 80);
  CHECK(short_run.kind == "adamw");
  CHECK(short_run.lr0 == 0.000119);  // round(0.002 * 5 / 84, 6), reference-yolo.md 2.4
  CHECK(choose_optimizer(o, 100, 1).lr0 == 0.002);  // round(0.01 / 5, 6)
  o.optimizer = "sgd";
  o.lr0 = 0.02;
  const auto explicit_sgd = choose_optimizer(o, 10001, 80);
  CHECK(explicit_sgd.kind == "sgd");
  CHECK(explicit_sgd.lr0 == 0.02);
  CHECK(explicit_sgd.momentum == o.momentum);
  CHECK_FALSE(explicit_sgd.automatic);
}

TEST_CASE("The factory builds each kind with its groups", "[unit][param_groups]") {
  const auto infos = test::yolo26n_params();
  config::OptimOptions o;
  OptimizerRun run;
  run.total_iterations = 100;  // auto -> AdamW
  auto adamw = build_optimizer(infos, o, run);
  CHECK(adamw->kind() == "adamw");
  CHECK(adamw->lr(1) == 0.000119);
  CHECK(adamw->momentum(1) == 0.9);
  o.optimizer = "sgd";
  auto sgd = build_optimizer(infos, o, run);
  CHECK(sgd->kind() == "sgd");
  CHECK(sgd->num_groups() == 3);
  CHECK(sgd->group_size(0) == 126);  // every matrix is a decayed weight
  CHECK(dynamic_cast<const MuSGD*>(sgd.get())->muon_matrices() == 0);
  auto musgd = build_optimizer(infos, musgd_options(), run);
  CHECK(musgd->lr(6) == 0.03);
  CHECK(dynamic_cast<const MuSGD*>(musgd.get())->options(7).w_muon == 0.2);
}

TEST_CASE("Config values this build does not offer are refused with the key",
          "[unit][param_groups]") {
  auto o = musgd_options();
  o.bucketing = "padded";
  CHECK_THROWS_AS(build_optimizer(test::yolo26n_params(), o, {}), ConfigError);
  CHECK_THROWS_WITH(parse_bucketing("padded"), Catch::Contains("optim.bucketing"));
  CHECK_THROWS_WITH(parse_ns_dtype("fp16"), Catch::Contains("optim.ns_dtype"));
  CHECK_THROWS_WITH(parse_ns_kernel("fast"), Catch::Contains("optim.ns_kernel"));
  o = musgd_options();
  o.ns_kernel = "fast";
  CHECK_THROWS_AS(build_optimizer(test::yolo26n_params(), o, {}), ConfigError);
}

TEST_CASE("optim.ns_kernel reaches MuSGD's Newton-Schulz", "[unit][param_groups]") {
  for (const auto kernel : {NsKernel::kEmulated, NsKernel::kNative}) {
    auto o = musgd_options();
    o.ns_kernel = ns_kernel_name(kernel);
    CHECK(parse_ns_kernel(o.ns_kernel) == kernel);
    const auto opt = build_optimizer(test::yolo26n_params(), o, {});
    CHECK(dynamic_cast<const MuSGD*>(opt.get())->cpu_ns_kernel() == kernel);
  }
  CHECK(parse_ns_kernel("auto") == NsKernel::kAuto);
}
