// Atomic writes under failure: a full disk (a file-size limit, RLIMIT_FSIZE, with SIGXFSZ
// ignored, so write(2) fails with EFBIG as it fails with ENOSPC on a full disk) is one IoError
// saying "disk full" for every kind of output, leaves no temporary file and keeps the previous
// good file; temporaries of killed writers are removed by the next write; a hard-linked
// best.ckpt survives SIGKILLs at any point of publishing it.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <thread>

#include "ckpt/checkpoint.h"
#include "ckpt/checkpoint_files.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "eval/predictions_json.h"
#include "report/metrics_log.h"
#include "report/run_dir.h"
#include "test_support.h"

using namespace detrain;
using detrain::test::TempDir;
namespace fs = std::filesystem;

namespace {

// Files may grow to `bytes` while alive (this process only); SIGXFSZ is ignored meanwhile.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    ::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit saved_{};
  void (*old_handler_)(int) = nullptr;
};

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

ckpt::Checkpoint checkpoint_with(int64_t elements, float value) {
  ckpt::Checkpoint c;
  c.arch.arch_file = "models/yolo26.yaml";
  c.model.emplace_back("model.0.weight", torch::full({elements}, value));
  return c;
}

pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

}  // namespace

TEST_CASE("a full disk fails every write with one IoError and keeps the previous file",
          "[unit][common]") {
  TempDir dir;
  const std::string path = dir.file("out.bin");
  write_file_atomic(path, std::string(1000, 'a'));
  const std::string ckpt = dir.file("last.ckpt");
  ckpt::save_checkpoint(ckpt, checkpoint_with(16, 1.0f));
  const std::string ckpt_before = read_file(ckpt);
  const auto files_before = names_in(dir.path());

  auto expect_disk_full = [&](const std::function<void()>& write, const std::string& target) {
    std::string message;
    {
      FileSizeLimit limit(64 * 1024);
      try {
        write();
      } catch (const IoError& e) {
        message = e.what();
      }
    }
    INFO(target);
    CHECK_THAT(message, Catch::Contains("cannot write " + target) &&
                            Catch::Contains("disk full (free some space and retry)"));
    CHECK(message.find('\n') == std::string::npos);
  };
  expect_disk_full([&] { write_file_atomic(path, std::string(1 << 20, 'b')); }, path);
  CHECK(read_file(path) == std::string(1000, 'a'));
  // A checkpoint: LibTorch's zip writer throws its own error on the short write.
  expect_disk_full([&] { ckpt::save_checkpoint(ckpt, checkpoint_with(1 << 20, 2.0f)); }, ckpt);
  CHECK(read_file(ckpt) == ckpt_before);
  CHECK(ckpt::load_checkpoint(ckpt).model[0].second[0].item<float>() == 1.0f);
  // results.csv and predictions.json.
  report::ResultsTable table;
  table.columns = {"epoch", "x"};
  table.rows.assign(20000, {1.0, 0.123456789});
  expect_disk_full([&] { report::write_results_csv(dir.file("results.csv"), table); },
                   dir.file("results.csv"));
  std::vector<eval::CocoRecord> records(20000);
  expect_disk_full([&] { eval::write_predictions_json(dir.file("predictions.json"), records); },
                   dir.file("predictions.json"));
  // Nothing new is left behind: no temporaries, no partial targets.
  CHECK(names_in(dir.path()) == files_before);
}

TEST_CASE("a full disk cuts a metrics.jsonl append back to its complete lines", "[unit][common]") {
  TempDir dir;
  const std::string path = dir.file("metrics.jsonl");
  report::MetricsJsonl log(path);
  report::StepRecord r;
  r.losses = {{"box", 1.0}};
  log.append(r);
  const std::string before = read_file(path);
  std::string message;
  {
    FileSizeLimit limit(before.size() + 10);  // room for a part of the next line only
    try {
      log.append(r);
    } catch (const IoError& e) {
      message = e.what();
    }
  }
  CHECK_THAT(message, Catch::Contains("cannot append to " + path + ": disk full"));
  CHECK(read_file(path) == before);
  log.append(r);  // space again: appending continues
  CHECK(report::read_metrics_jsonl(path).size() == 2);
}

TEST_CASE("the next write removes temporaries of dead writers and keeps live ones",
          "[unit][common]") {
  TempDir dir;
  const std::string dead = std::to_string(dead_pid());
  for (const std::string& name : std::vector<std::string>{
           "last.ckpt.tmp." + dead + ".12", "last.ckpt.tmp.1.5", "best.ckpt.tmp." + dead + ".7",
           "notes.tmp.txt", "last.ckpt.tmp." + std::to_string(::getpid()) + ".3"})
    detrain::test::write_text(dir.file(name), "partial");
  write_file_atomic(dir.file("last.ckpt"), "new");
  // Only this target's temporary of the dead process is gone (pid 1 and this one are alive).
  std::vector<std::string> kept{"best.ckpt.tmp." + dead + ".7", "last.ckpt",
                                "last.ckpt.tmp." + std::to_string(::getpid()) + ".3",
                                "last.ckpt.tmp.1.5", "notes.tmp.txt"};
  std::sort(kept.begin(), kept.end());
  CHECK(names_in(dir.path()) == kept);
  CHECK(remove_stale_temporaries(dir.path()) == 1);  // a whole-directory sweep (resume)
  CHECK_FALSE(fs::exists(dir.file("best.ckpt.tmp." + dead + ".7")));
}

TEST_CASE("best.ckpt stays a complete checkpoint when publishing it is killed at any moment",
          "[unit][train]") {
  TempDir dir;
  const report::RunPaths paths = report::run_paths(dir.path());
  fs::create_directories(paths.weights_dir);
  // The bytes of two published best.ckpt files (shippable checkpoints of two epochs); the
  // writer alternates them into best.ckpt as publish_best writes it (save_checkpoint's atomic
  // write), in a child without LibTorch: only the file operations.
  ckpt::publish_best(paths, checkpoint_with(1 << 18, 1.0f), /*half=*/false);
  const std::string a = read_file(paths.best_ckpt);
  ckpt::publish_best(paths, checkpoint_with(1 << 18, 2.0f), /*half=*/false);
  const std::string b = read_file(paths.best_ckpt);
  REQUIRE(a != b);
  for (int kill = 0; kill < 12; ++kill) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      for (int i = 0;; ++i) write_file_atomic(paths.best_ckpt, i % 2 ? a : b);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(3 + 7 * kill));
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    const std::string best = read_file(paths.best_ckpt);
    INFO("kill " << kill);
    CHECK((best == a || best == b));
  }
  // Shippable: the weights travel as the EMA, nothing a resume needs is kept.
  const auto best = ckpt::load_checkpoint(paths.best_ckpt);
  CHECK(best.ema.size() == 1);
  CHECK(best.model.empty());
}
