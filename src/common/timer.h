// Wall-clock stopwatch for logs and benchmarks (steady clock; never for timed assertions), and
// the process CPU clock benchmarks report beside wall time (per-core cost that a busy machine
// does not inflate the way it inflates wall time).
#pragma once

#include <time.h>

#include <chrono>

namespace detrain {

class Stopwatch {
 public:
  Stopwatch() : start_(Clock::now()) {}
  void reset() { start_ = Clock::now(); }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  double millis() const { return seconds() * 1e3; }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_;
};

// CPU seconds used by all threads of the process so far.
inline double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace detrain
