// The README's exit-code table against ExitCode (src/common/errors.h): the same codes with the
// same meanings, and every row made to happen through the real executable, so a code that a
// refactoring moves (a missing data folder reported as a bad config) fails here.
#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/paths.h"
#include "test_support.h"
#include "train/train_fixtures.h"

using namespace detrain;
using detrain::test::run_detrain;

namespace {

// The rows "| 4 | bad data: ... |" of README.md's "## Exit codes" section: code -> meaning.
std::map<int, std::string> readme_exit_codes() {
  const std::string readme = read_file(source_dir() + "/README.md");
  const size_t section = readme.find("\n## Exit codes\n");
  REQUIRE(section != std::string::npos);
  const size_t end = readme.find("\n## ", section + 1);
  std::istringstream lines(readme.substr(section, end - section));
  static const std::regex row(R"(^\|\s*(\d+)\s*\|\s*(.*?)\s*\|\s*$)");
  std::map<int, std::string> rows;
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, row)) {
      INFO(line);
      CHECK(rows.count(std::stoi(m[1])) == 0);  // each code once
      rows[std::stoi(m[1])] = m[2];
    }
  }
  return rows;
}

// Every ExitCode with the words its README row starts with: a code renumbered in errors.h, or
// a row reworded or added in the README, fails the table check below.
struct ExitCodeRow {
  ExitCode code;
  const char* meaning;
};
constexpr ExitCodeRow kExitCodeRows[] = {
    {ExitCode::kOk, "success"},
    {ExitCode::kInternal, "internal error"},
    {ExitCode::kUsage, "bad command line"},
    {ExitCode::kConfig, "bad config"},
    {ExitCode::kData, "bad data"},
    {ExitCode::kIo, "cannot read or write a file"},
    {ExitCode::kModel, "bad model"},
    {ExitCode::kNumeric, "training diverged"},
    {ExitCode::kDistributed, "a distributed rank failed"},
    {ExitCode::kRequeued, "requeued"},
    {ExitCode::kInterrupted, "interrupted"},
};

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += " '" + w + "'";
  return out;
}

}  // namespace

TEST_CASE("the README's exit-code table is src/common/errors.h's", "[unit][cli][exit_codes]") {
  const std::map<int, std::string> rows = readme_exit_codes();
  CHECK(rows.size() == std::size(kExitCodeRows));
  for (const ExitCodeRow& r : kExitCodeRows) {
    const int code = static_cast<int>(r.code);
    INFO("exit " << code << " (" << r.meaning << ")");
    REQUIRE(rows.count(code) == 1);
    CHECK(rows.at(code).rfind(r.meaning, 0) == 0);
  }
}

TEST_CASE("every exit code of the README's table, from the executable",
          "[smoke][cli][exit_codes]") {
  test::TempDir dir("exit-codes");
  // The training rows run on 16 generated 96-128 px images at 64 px, one thread.
  const auto synth = test::tiny_synth(dir);
  auto train_args = [&](const std::string& name) {
    return join(test::tiny_overrides(dir, synth.detect_yaml, name));
  };
  // An Ultralytics data YAML whose folders were never fetched.
  test::write_text(
      dir.file("unfetched/data.yaml"),
      "path: " + dir.file("unfetched") + "\ntrain: images/train\nval: images/val\nnames: [a]\n");
  test::write_text(dir.file("garbage.ckpt"), "not a checkpoint\n");
  test::write_text(dir.file("a-file"), "a file where a folder is expected\n");

  struct Trigger {
    std::string args;
    std::string says;  // a part of the one-line message
  };
  const std::map<int, std::function<Trigger()>> triggers = {
      {0,
       [] {
         return Trigger{"config show train.epochs=3", "train.epochs"};
       }},
      {1,
       [] {
         return Trigger{"--fault-internal config show", "please report it"};
       }},
      {2,
       [] {
         return Trigger{"trian", "did you mean"};
       }},
      {3,
       [] {
         return Trigger{"config show train.epochs=three", "train.epochs"};
       }},
      {4,
       [&] {
         return Trigger{"data stats -d '" + dir.file("unfetched/data.yaml") + "'",
                        "fetch the data set first"};
       }},
      {5,
       [&] {
         return Trigger{"config dump -o '" + dir.file("a-file/default.yaml") + "'", "a-file"};
       }},
      {6,
       [&] {
         return Trigger{"model -w '" + dir.file("garbage.ckpt") + "'", "garbage.ckpt"};
       }},
      {7,
       [&] {
         // lr0=10 without clipping diverges within 3 epochs; max_bad_steps=0: no rollback.
         return Trigger{"train" + train_args("diverged") +
                            " optim.optimizer=sgd optim.lr0=10 train.clip_grad_norm=0 "
                            "train.max_bad_steps=0 train.epochs=3",
                        "training diverged"};
       }},
      {8,
       [&] {
         // Rank 0 of two, alone: rank 1 never joins within the 3 s timeout.
         return Trigger{"train" + train_args("alone") + " train.dist_timeout_s=3", "rank 0"};
       }},
      {75,
       [&] {
         // Two local ranks; rank 0 sends the requeue signal to the launcher at its first
         // iteration, which forwards it to both (no SLURM_JOB_ID: nothing to requeue).
         return Trigger{"train --nproc 2 --fault-requeue 0:1" + train_args("requeued"),
                        "stopped for a requeue"};
       }},
      {130,
       [&] {
         return Trigger{"train --max-iterations 1" + train_args("stopped"),
                        "a resumable checkpoint is in"};
       }},
  };
  for (const auto& [code, meaning] : readme_exit_codes()) {
    INFO("exit " << code << ": " << meaning);
    REQUIRE(triggers.count(code) == 1);  // a new row needs a trigger here
    const Trigger t = triggers.at(code)();
    std::optional<test::ScopedEnv> world, rank, addr, port;
    if (code == 8) {
      world.emplace("WORLD_SIZE", "2");
      rank.emplace("RANK", "0");
      addr.emplace("MASTER_ADDR", "127.0.0.1");
      port.emplace("MASTER_PORT", std::to_string(test::free_tcp_port()));
    }
    const test::RunResult r = run_detrain(t.args, dir.path());
    INFO("detrain " << t.args << "\n" << r.output);
    CHECK(r.exit_code == code);
    CHECK(r.output.find(t.says) != std::string::npos);
    if (code != 0 && code != 75 && code != 130) {
      // One line on stderr says what went wrong (the training rows log before it).
      const size_t at = r.output.rfind("detrain: error: ");
      REQUIRE(at != std::string::npos);
      const std::string last = r.output.substr(at);
      CHECK(std::count(last.begin(), last.end(), '\n') == 1);
    }
  }
}
