// A minimal parallel loop for the evaluator (std::thread, no pool): items are claimed from an
// atomic counter, each item writes only its own outputs, so results never depend on the thread
// count or scheduling. The first exception thrown by any item is rethrown to the caller.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "common/cores.h"
#include "common/timer.h"  // process_cpu_seconds

namespace detrain::eval {

// Resolves a thread request: 0 means every core.
inline int resolve_threads(int requested) {
  if (requested > 0) return requested;
  return usable_cores();
}

// Calls fn(worker, begin, end) for consecutive chunks of [0, n) of `chunk` items; `worker` is in
// [0, threads) and lets callers keep per-thread scratch space.
template <class F>
void parallel_chunks(size_t n, size_t chunk, int threads, F&& fn) {
  if (n == 0) return;
  chunk = std::max<size_t>(chunk, 1);
  const size_t chunks = (n + chunk - 1) / chunk;
  const int workers =
      static_cast<int>(std::min<size_t>(static_cast<size_t>(std::max(threads, 1)), chunks));
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto run = [&](int worker) {
    try {
      while (true) {
        const size_t c = next.fetch_add(1);
        if (c >= chunks) return;
        fn(worker, c * chunk, std::min(n, (c + 1) * chunk));
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      next.store(chunks);
    }
  };
  if (workers <= 1) {
    run(0);
  } else {
    std::vector<std::thread> pool;
    pool.reserve(static_cast<size_t>(workers - 1));
    for (int w = 1; w < workers; ++w) pool.emplace_back(run, w);
    run(0);
    for (auto& thread : pool) thread.join();
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace detrain::eval
