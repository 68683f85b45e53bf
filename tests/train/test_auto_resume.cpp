// train.resume=auto: a run with nothing to continue starts afresh; an interrupted run is
// continued from weights/last.ckpt; a torn last.ckpt is skipped for the previous good
// checkpoint (weights/epochN.ckpt), and with none left the run starts afresh, saying why; a
// finished run is left alone; under a restart a directory without checkpoints is reused (and its
// old metrics.jsonl lines dropped).
#include <torch/torch.h>  // before Catch: c10's logging defines a CHECK that Catch's must replace

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ckpt/checkpoint.h"
#include "config/config.h"
#include "log_capture.h"
#include "report/metrics_log.h"
#include "report/run_dir.h"
#include "test_support.h"
#include "train/auto_resume.h"
#include "train/train_fixtures.h"
#include "train/trainer.h"

using namespace detrain;
using namespace detrain::train;
using namespace detrain::test;
namespace fs = std::filesystem;

namespace {

config::TrainOptions auto_options(const TempDir& dir, const std::string& name) {
  config::TrainOptions t;
  t.project = dir.file("runs");
  t.name = name;
  t.resume = "auto";
  return t;
}

// find_auto_resume's choice and what it logged.
std::pair<AutoResumeChoice, std::string> look(const config::TrainOptions& t, bool restarted) {
  std::ostringstream said;
  AutoResumeChoice choice;
  {
    LogCapture capture(said);
    choice = find_auto_resume(t, restarted);
  }
  return {choice, said.str()};
}

// The first half of `path`: what a write torn by a crash outside detrain's atomic writes (a
// copy, a file system losing data) would leave.
void tear(const std::string& path) {
  const auto size = fs::file_size(path);
  fs::resize_file(path, size / 2);
}

bool contains(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE(
    "train.resume=auto continues the last good checkpoint, skips torn ones, and starts afresh "
    "when there is nothing to continue",
    "[train][restarts]") {
  TempDir dir;
  const auto synth = tiny_synth(dir);
  auto overrides = tiny_overrides(dir, synth.detect_yaml, "auto");
  overrides.push_back("train.save_period=1");  // weights/epoch1.ckpt after the first epoch
  overrides.push_back("train.resume=auto");
  const config::TrainOptions options = auto_options(dir, "auto");

  SECTION("nothing to continue: a new run") {
    const auto [choice, said] = look(options, false);
    CHECK(choice.run_dir.empty());
    CHECK(choice.checkpoint.empty());
    CHECK(contains(said, "train.resume=auto: no run " + dir.file("runs") +
                             "/auto to continue; starting a new run"));
    // Under a restart, a directory the previous attempt made but never saved in is reused.
    fs::create_directories(dir.file("runs/auto/weights"));
    const auto [reused, why] = look(options, true);
    CHECK(reused.run_dir == dir.file("runs/auto"));
    CHECK(reused.checkpoint.empty());
    CHECK(contains(why, "has no checkpoint yet"));
    // Without a restart such a directory is not this run's: a new one.
    CHECK(look(options, false).first.run_dir.empty());

    // A restarted run trains there from the start, without the dead attempt's metrics lines.
    std::ofstream(dir.file("runs/auto/metrics.jsonl"))
        << R"({"epoch":0,"iter":0,"step":0,"loss":{"box":99.0}})"
        << "\n";
    struct RestartedJob {  // SLURM_RESTART_COUNT=1 for this process while alive
      RestartedJob() { ::setenv("SLURM_RESTART_COUNT", "1", 1); }
      ~RestartedJob() { ::unsetenv("SLURM_RESTART_COUNT"); }
    };
    TrainSummary s;
    {
      RestartedJob restarted;
      TrainRequest request;
      request.config = config::resolve("", overrides);
      request.callbacks.should_stop = stop_after(1);
      s = run_training(request);
    }
    CHECK(s.run_dir == dir.file("runs/auto"));
    const auto lines = report::read_metrics_jsonl(dir.file("runs/auto/metrics.jsonl"));
    REQUIRE(lines.size() == 1);
    CHECK(lines[0]["loss"]["box"].get<double>() != 99.0);
  }

  SECTION("an interrupted run, then torn checkpoints") {
    TrainRequest first;
    first.config = config::resolve("", overrides);
    first.callbacks.should_stop = stop_after(6);  // epoch 2 iteration 2
    const TrainSummary stopped = run_training(first);
    REQUIRE(stopped.interrupted);
    const std::string last = dir.file("runs/auto/weights/last.ckpt");
    const std::string epoch1 = dir.file("runs/auto/weights/epoch1.ckpt");
    REQUIRE(fs::exists(epoch1));

    // A temporary file of a killed write is not a checkpoint.
    { std::ofstream(last + ".tmp.999999.0") << "half a checkpoint"; }
    const auto [found, said] = look(options, false);
    CHECK(found.run_dir == dir.file("runs/auto"));
    CHECK(found.checkpoint == last);
    CHECK(contains(said, "train.resume=auto: continuing " + last + " at epoch 2 iteration 2"));

    const std::string good_last = dir.file("last.ckpt.good"), good_epoch1 = dir.file("e1.good");
    fs::copy_file(last, good_last);
    fs::copy_file(epoch1, good_epoch1);
    tear(last);
    const auto [previous, why] = look(options, true);
    CHECK(previous.checkpoint == epoch1);
    CHECK(contains(why,
                   "continuing " + epoch1 + " at epoch 2 iteration 0; " + last + " is unusable ("));

    tear(epoch1);
    const auto [none, nothing] = look(options, true);
    CHECK(none.run_dir.empty());
    CHECK(none.checkpoint.empty());
    CHECK(contains(nothing, "no usable checkpoint in " + dir.file("runs/auto")));
    CHECK(contains(nothing, "starting a new run"));

    // The whole command: the torn last.ckpt is passed over for epoch1.ckpt, the run finishes.
    fs::copy_file(good_epoch1, epoch1, fs::copy_options::overwrite_existing);
    TrainRequest again;
    again.config = config::resolve("", overrides);
    std::ostringstream log;
    TrainSummary finished;
    {
      LogCapture capture(log);
      finished = run_training(again);
    }
    INFO(log.str());
    CHECK_FALSE(finished.interrupted);
    CHECK(finished.run_dir == dir.file("runs/auto"));
    CHECK(finished.optimizer_steps == 4);
    CHECK(contains(log.str(), "continuing " + epoch1));
    CHECK(ckpt::load_checkpoint(last).position.finished);
    CHECK_FALSE(fs::exists(last + ".tmp.999999.0"));  // tidied on resume

    // A finished run is not continued: the next one gets a new directory.
    const auto [fresh, done] = look(options, false);
    CHECK(fresh.run_dir.empty());
    CHECK(contains(done, "finished every epoch"));
  }
}
