// See optim_figures.h.
#include "bench/optim_figures.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <mutex>

#include "bench/abba.h"
#include "optim/newton_schulz.h"

namespace detrain::bench {

namespace {

// RecordFunction takes a plain function pointer and no user data, and MuSGD's Newton-Schulz
// calls gemms from intra-op workers that carry no thread-local state of the caller: the count
// must be reachable from any thread, so it is the one process-wide counter of the bench, used
// by one count_op_calls at a time.
std::atomic<int64_t>& op_calls() {
  static std::atomic<int64_t> calls{0};
  return calls;
}

std::unique_ptr<at::ObserverContext> count_op(const at::RecordFunction&) {
  op_calls().fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

}  // namespace

int64_t count_op_calls(const std::function<void()>& run) {
  static std::mutex one_at_a_time;
  const std::lock_guard<std::mutex> lock(one_at_a_time);
  op_calls() = 0;
  const auto handle = at::addGlobalCallback(
      at::RecordFunctionCallback(count_op).needsInputs(false).scopes({at::RecordScope::FUNCTION}));
  run();
  at::removeCallback(handle);
  return op_calls().load();
}

// Per matrix (r <= c after orienting) 5 x (X X^T: 2 r^2 c, A A: 2 r^3, B X: 2 r^2 c). Batching
// changes none of it, only how it is scheduled.
double newton_schulz_gflop(const std::vector<optim::MatrixKey>& keys) {
  double flop = 0;
  for (const auto& key : keys) {
    double rest = 1;
    for (size_t d = 1; d < key.shape.size(); ++d) rest *= static_cast<double>(key.shape[d]);
    const double r = std::min<double>(static_cast<double>(key.shape[0]), rest);
    const double c = std::max<double>(static_cast<double>(key.shape[0]), rest);
    flop += static_cast<double>(key.count) * optim::kNsSteps * (4 * r * r * c + 2 * r * r * r);
  }
  return flop / 1e9;
}

double sgemm_peak_gflops() {
  constexpr int64_t kN = 1024;
  const auto a = torch::randn({kN, kN}), b = torch::randn({kN, kN});  // [N, N]
  auto c = torch::empty({kN, kN});                                    // [N, N]
  const Timing t = time_repeats(5, [&] { at::mm_out(c, a, b); });
  return 2.0 * kN * kN * kN / (t.min_ms * 1e6);
}

double load_average() {
  std::ifstream in("/proc/loadavg");
  double load = -1;
  in >> load;
  return in ? load : -1;
}

}  // namespace detrain::bench
