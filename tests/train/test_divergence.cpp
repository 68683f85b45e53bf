// Divergence: what counts as a bad step, the rollback budget and its learning-rate halving, the
// exit-7 message (said once, naming a checkpoint that exists, advising fp32 only to bf16 runs),
// and runs at optim.lr0=10 without clipping that the reference ends with zero or NaN losses and
// exit 0: detrain rolls back with half the learning rate each time (logged) and, when that does
// not help, stops with exit 7. Also: resuming repairs a damaged best.ckpt and removes the
// temporaries of killed writes.
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>

#include "ckpt/checkpoint.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "config/config.h"
#include "report/run_dir.h"
#include "test_support.h"
#include "train/divergence.h"
#include "train/train_fixtures.h"
#include "train/trainer.h"

using namespace detrain;
using namespace detrain::train;
using namespace detrain::ckpt;
using namespace detrain::report;
using detrain::test::TempDir;
namespace fs = std::filesystem;

namespace {

TrainRequest request_for(const std::vector<std::string>& overrides) {
  TrainRequest r;
  r.config = config::resolve("", overrides);
  return r;
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("bad steps: non-finite loss, or exactly zero loss on a batch with targets",
          "[unit][train]") {
  CHECK_FALSE(loss_problem(1.5, 3));
  CHECK_FALSE(loss_problem(0.0, 0));  // a background-only batch may have nothing to learn
  CHECK(loss_problem(NAN, 3) == "non-finite loss");
  CHECK(loss_problem(INFINITY, 0) == "non-finite loss");
  CHECK(loss_problem(0.0, 12) == "loss exactly 0 on a batch with 12 targets");
}

TEST_CASE("the rollback budget halves the learning rate and then stops", "[unit][train]") {
  DivergencePolicy policy(2);
  CHECK(policy.try_rollback());
  CHECK(policy.lr_scale() == 0.5);
  CHECK(policy.try_rollback());
  CHECK(policy.lr_scale() == 0.25);
  CHECK_FALSE(policy.try_rollback());
  CHECK(policy.rollbacks() == 2);
  CHECK(rollback_message("non-finite loss at epoch 1 iteration 3", DivergencePolicy(3, 1, 0.5), 0,
                         0) ==
        "divergence: non-finite loss at epoch 1 iteration 3; rolled back to epoch 1 iteration 0, "
        "learning rate x0.5 (rollback 1 of train.max_bad_steps = 3)");
  DivergencePolicy none(0);  // max_bad_steps 0: the first bad step stops the run
  CHECK_FALSE(none.try_rollback());

  DivergenceContext fp32;
  fp32.checkpoint = "runs/x/weights/last.ckpt";
  fp32.save_period_key = "train.save_period_steps";
  const std::string m = diverged_message("non-finite loss at epoch 2 iteration 1", policy, fp32);
  CHECK(m ==
        "training diverged: non-finite loss at epoch 2 iteration 1 after 2 rollback(s) with the "
        "learning rate halved each time (train.max_bad_steps = 2); the last good checkpoint is "
        "runs/x/weights/last.ckpt; lower optim.lr0");
  DivergenceContext bf16 = fp32;
  bf16.bf16 = true;
  bf16.clipping = false;
  bf16.checkpoint.clear();
  const std::string b = diverged_message("x", policy, bf16);
  CHECK_THAT(b, Catch::Contains("no checkpoint was written yet (train.save_period_steps=0 and no "
                                "epoch finished)"));
  CHECK_THAT(b, Catch::EndsWith("lower optim.lr0, set train.clip_grad_norm (e.g. 10), or use "
                                "train.precision=fp32"));
}

TEST_CASE("the in-memory good state shares no storage with the live weights", "[unit][train]") {
  Checkpoint c;
  c.model.emplace_back("w", torch::ones({3}));
  c.generator_states["torch_cpu"] = torch::zeros({4}, torch::kByte);
  const Checkpoint copy = deep_copy(c);
  c.model[0].second.add_(1);
  CHECK(copy.model[0].second.sum().item<float>() == 3.0f);
}

TEST_CASE("lr0=10 without clipping rolls back with half the learning rate, then exits 7",
          "[smoke][train]") {
  TempDir dir;
  const auto synth = detrain::test::tiny_synth(dir);
  for (const std::string optimizer : {"adamw", "sgd"}) {
    auto overrides = detrain::test::tiny_overrides(dir, synth.detect_yaml, optimizer);
    for (const std::string& o : std::vector<std::string>{"optim.optimizer=" + optimizer,
                                                         "optim.lr0=10", "train.clip_grad_norm=0",
                                                         "train.max_bad_steps=2", "train.epochs=3"})
      overrides.push_back(o);
    std::string message;
    try {
      run_training(request_for(overrides));
    } catch (const NumericError& e) {
      message = e.what();
    }
    INFO(optimizer << ": " << message);
    const RunPaths p = run_paths(dir.file("runs/" + optimizer));
    spdlog::default_logger()->flush();  // tests do not set init_logging's flush level
    const std::string log = read_file(p.train_log);
    INFO(log);
    // Two rollbacks, each logged, then the stop.
    CHECK(count(log, "rolled back to epoch") == 2);
    CHECK_THAT(log, Catch::Contains("learning rate x0.25 (rollback 2 of train.max_bad_steps = 2)"));
    REQUIRE_THAT(message, Catch::StartsWith("training diverged: "));
    CHECK(count(message, "checkpoint") == 1);          // said once
    CHECK(message.find("fp32") == std::string::npos);  // the run is fp32 already
    CHECK_THAT(message, Catch::Contains("set train.clip_grad_norm"));
    if (fs::exists(p.last_ckpt)) {
      CHECK_THAT(message, Catch::Contains("the last good checkpoint is " + p.last_ckpt));
      CHECK(load_checkpoint(p.last_ckpt).position.optimizer_steps > 0);
    } else {
      CHECK_THAT(message, Catch::Contains("no checkpoint was written yet"));
    }
  }
}

TEST_CASE("resuming repairs a damaged best.ckpt and removes temporaries of killed writes",
          "[smoke][train]") {
  TempDir dir;
  const auto synth = detrain::test::tiny_synth(dir);
  TrainRequest first = request_for(detrain::test::tiny_overrides(dir, synth.detect_yaml, "r"));
  first.callbacks.should_stop =
      stop_after(6);  // epoch 1 validated (best.ckpt written), stopped in epoch 2
  const TrainSummary stopped = run_training(first);
  REQUIRE(stopped.interrupted);
  const RunPaths p = run_paths(stopped.run_dir);
  REQUIRE(fs::exists(p.best_ckpt));
  // A kill during the old copy left best.ckpt torn, and killed writes left temporaries.
  const std::string bytes = read_file(p.best_ckpt);
  fs::remove(p.best_ckpt);
  detrain::test::write_text(p.best_ckpt, bytes.substr(0, bytes.size() / 3));
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  const std::string tmp_last = p.last_ckpt + ".tmp." + std::to_string(gone) + ".1";
  const std::string tmp_csv = p.results_csv + ".tmp." + std::to_string(gone) + ".2";
  detrain::test::write_text(tmp_last, std::string(4096, 'x'));
  detrain::test::write_text(tmp_csv, "");
  REQUIRE_THROWS_AS(load_checkpoint(p.best_ckpt), ModelError);

  TrainRequest second = request_for(detrain::test::tiny_overrides(dir, synth.detect_yaml, "r"));
  second.resume = stopped.run_dir;
  run_training(second);
  CHECK_FALSE(fs::exists(tmp_last));
  CHECK_FALSE(fs::exists(tmp_csv));
  // Rebuilt as what best.ckpt always is: the shippable EMA weights.
  CHECK(load_checkpoint(p.best_ckpt).ema.size() > 0);
  spdlog::default_logger()->flush();
  CHECK_THAT(read_file(p.train_log), Catch::Contains(p.best_ckpt + " was damaged"));
}
