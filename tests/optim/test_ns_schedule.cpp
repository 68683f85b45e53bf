// optim/ns_schedule: the lanes (largest piece first to the least loaded lane) and their run on
// LibTorch's threads. The second test fails if ns_schedule.cpp loses its OpenMP compile flag
// (CMakeLists.txt, DETRAIN_OPENMP_SOURCES): at::parallel_for then runs every lane on the
// calling thread.
#include <ATen/Parallel.h>

#include <catch2/catch.hpp>
#include <mutex>
#include <set>
#include <thread>

#include "optim/ns_schedule.h"

using namespace detrain::optim;

TEST_CASE("balance_lanes: largest first to the least loaded lane", "[unit][optim][ns-schedule]") {
  const auto lanes = balance_lanes({1, 5, 2, 4}, 2);
  REQUIRE(lanes.size() == 2);
  CHECK(lanes[0] == std::vector<size_t>{1, 0});  // 5, then 1 (lane 0 had 5, lane 1 had 6)
  CHECK(lanes[1] == std::vector<size_t>{3, 2});
  CHECK(balance_lanes({3}, 0).size() == 1);
}

TEST_CASE("run_balanced runs its lanes on LibTorch's threads, one lane each",
          "[unit][optim][ns-schedule]") {
  const int before = at::get_num_threads();
  at::set_num_threads(2);
  std::mutex mutex;
  std::set<std::thread::id> threads;
  std::vector<int> ran(4, 0);
  run_balanced({1, 1, 1, 1}, [&](size_t i) {
    std::lock_guard<std::mutex> lock(mutex);
    threads.insert(std::this_thread::get_id());
    ++ran[i];
  });
  at::set_num_threads(before);
  CHECK(ran == std::vector<int>{1, 1, 1, 1});
  CHECK(threads.size() == 2);
}
