// The parallel loop of the split scans (YOLO labels and image checks): each item into its own
// slot, so the result is the same for any number of threads. No LibTorch.
#pragma once

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "common/cores.h"

namespace detrain::data {

// Runs `body(i)` for i in [0, n) on up to usable_cores() threads (one per 64 items at most).
// The first exception a body throws is rethrown here once every thread has stopped (the others
// stop taking work).
template <class Body>
void scan_parallel(size_t n, const Body& body) {
  const size_t threads = std::min<size_t>(static_cast<size_t>(usable_cores()), (n + 63) / 64);
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) body(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      try {
        for (size_t i; (i = next.fetch_add(1)) < n;) body(i);
      } catch (...) {
        next = n;
        const std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    });
  for (auto& thread : pool) thread.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace detrain::data
