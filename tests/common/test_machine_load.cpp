// The start-time load sample and the two choices made from it: OpenMP's wait policy (bounded
// spinning on idle CPUs, passive on busy ones) and what the run reports. Loads are posed through
// DETRAIN_MACHINE_LOAD, so the verdicts do not depend on how busy the test machine is.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include "common/cores.h"
#include "common/machine_load.h"
#include "common/openmp_wait.h"

using namespace detrain;

namespace {

// Sets or unsets environment variables for one scope and puts the old values back.
class EnvOverrides {
 public:
  void set(const char* name, const char* value) {
    const char* old = std::getenv(name);
    saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~EnvOverrides() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it)
      it->second ? setenv(it->first, it->second->c_str(), 1) : unsetenv(it->first);
  }

 private:
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

}  // namespace

TEST_CASE("machine load: text round trip, busy rule, live sample", "[unit][common]") {
  const MachineLoad load{1.5, 8};
  CHECK(format_machine_load(load) == "1.5 other runnable threads on 8 CPUs");
  const std::optional<MachineLoad> back = parse_machine_load(format_machine_load(load));
  REQUIRE(back);
  CHECK(back->other_runnable == 1.5);
  CHECK(back->online_cpus == 8);
  CHECK_FALSE(parse_machine_load("1.5 other runnable threads on 8 CPUs, more"));
  CHECK_FALSE(parse_machine_load("busy"));
  CHECK_FALSE(parse_machine_load("-1.0 other runnable threads on 8 CPUs"));
  // Idle CPUs must hold our threads, with half a thread of slack.
  CHECK_FALSE(machine_is_busy({0.2, 2}, 2));
  CHECK(machine_is_busy({1.0, 2}, 2));
  CHECK(machine_is_busy({2.0, 2}, 2));
  CHECK_FALSE(machine_is_busy({2.0, 16}, 8));
  CHECK(machine_is_busy({9.0, 16}, 8));
  // The threads a run takes: all on idle cores, else what the idle CPUs hold, at least one.
  CHECK(threads_idle_cpus_hold({0.2, 2}, 2) == 2);
  CHECK(threads_idle_cpus_hold({1.0, 2}, 2) == 1);
  CHECK(threads_idle_cpus_hold({2.0, 2}, 2) == 1);
  CHECK(threads_idle_cpus_hold({5.0, 2}, 2) == 1);
  CHECK(threads_idle_cpus_hold({2.0, 16}, 8) == 8);
  CHECK(threads_idle_cpus_hold({9.0, 16}, 8) == 7);
  CHECK(threads_idle_cpus_hold({11.6, 16}, 16) == 4);
#if defined(__linux__)
  const std::optional<MachineLoad> live = sample_machine_load(3, 1);
  REQUIRE(live);
  CHECK(live->other_runnable >= 0);
  CHECK(live->online_cpus >= usable_cores());
#endif
}

#if defined(__linux__)
TEST_CASE("a running process can leave its own threads out of the load", "[unit][common]") {
  // Three threads of ours that never sleep: procs_running always counts them, so the plain
  // readings exceed the ones without our threads by about 3, whatever else runs. Readings
  // alternate, so other processes' load moves both alike.
  std::atomic<bool> stop{false};
  std::vector<std::thread> spinners;
  for (int i = 0; i < 3; ++i)
    spinners.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  double plain = 0, others = 0;
  const int readings = 20;
  for (int i = 0; i < readings; ++i) {
    plain += sample_machine_load(1, 0)->other_runnable;
    others += sample_machine_load(1, 0, /*exclude_own=*/true)->other_runnable;
  }
  stop = true;
  for (auto& t : spinners) t.join();
  INFO("plain " << plain / readings << ", without our threads " << others / readings);
  CHECK(plain / readings >= 2.5);
  CHECK(plain / readings - others / readings >= 2.0);
  CHECK(others >= 0);
}
#endif

TEST_CASE("OpenMP wait: bounded spin when idle, passive when busy, yours when set",
          "[unit][common]") {
  EnvOverrides env;
  env.set("OMP_WAIT_POLICY", nullptr);
  env.set("GOMP_SPINCOUNT", nullptr);
  env.set("DETRAIN_OPENMP_WAIT", nullptr);
  const std::string spins = std::to_string(kBoundedSpins);

  SECTION("idle CPUs: bounded spinning, and the children inherit it") {
    env.set("DETRAIN_MACHINE_LOAD", "0.0 other runnable threads on 256 CPUs");
    CHECK(choose_openmp_wait_for("train"));
    REQUIRE(std::getenv("GOMP_SPINCOUNT"));
    CHECK(std::getenv("GOMP_SPINCOUNT") == spins);
    CHECK(std::getenv("OMP_WAIT_POLICY") == nullptr);
    CHECK(openmp_wait_in_effect() == "bounded spin (GOMP_SPINCOUNT=" + spins +
                                         "): idle CPUs, 0.0 other runnable threads on 256 CPUs");
    CHECK_FALSE(choose_openmp_wait_for("train"));  // an exec'd child keeps the choice
  }
  SECTION("busy CPUs: passive") {
    env.set("DETRAIN_MACHINE_LOAD", "300.0 other runnable threads on 2 CPUs");
    CHECK(choose_openmp_wait_for("bench"));
    REQUIRE(std::getenv("OMP_WAIT_POLICY"));
    CHECK(std::string(std::getenv("OMP_WAIT_POLICY")) == "PASSIVE");
    CHECK(std::getenv("GOMP_SPINCOUNT") == nullptr);
    CHECK(openmp_wait_in_effect().rfind("passive: busy CPUs, 300.0 other runnable", 0) == 0);
  }
  SECTION("short commands and the user's own setting are left alone") {
    env.set("DETRAIN_MACHINE_LOAD", "0.0 other runnable threads on 256 CPUs");
    CHECK_FALSE(choose_openmp_wait_for("config"));
    CHECK_FALSE(choose_openmp_wait_for(nullptr));
    CHECK(openmp_wait_in_effect() == "libgomp default");
    env.set("OMP_WAIT_POLICY", "ACTIVE");
    CHECK_FALSE(choose_openmp_wait_for("train"));
    CHECK(std::getenv("GOMP_SPINCOUNT") == nullptr);
    CHECK(openmp_wait_in_effect() == "OMP_WAIT_POLICY=ACTIVE (set by you)");
    env.set("OMP_WAIT_POLICY", nullptr);
    env.set("GOMP_SPINCOUNT", "500");
    CHECK_FALSE(choose_openmp_wait_for("val"));
    CHECK(openmp_wait_in_effect() == "GOMP_SPINCOUNT=500 (set by you)");
  }
}

TEST_CASE("threads at the start-time load: the posed sample decides", "[unit][common]") {
  EnvOverrides env;
  env.set("DETRAIN_MACHINE_LOAD", "2.0 other runnable threads on 2 CPUs");
  CHECK(threads_at_startup_load(2) == 1);
  env.set("DETRAIN_MACHINE_LOAD", "2.0 other runnable threads on 16 CPUs");
  CHECK(threads_at_startup_load(16) == 14);
  CHECK(threads_at_startup_load(8) == 8);
}
