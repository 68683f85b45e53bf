// See abba.h.
#include "bench/abba.h"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "common/timer.h"

namespace detrain::bench {

Timing summarize(std::vector<double> ms) {
  if (ms.empty()) return {};
  std::sort(ms.begin(), ms.end());
  return {ms.front(), ms[ms.size() / 2], ms.back()};
}

Clock steady_clock_ms() {
  // Shared so that copies of the clock read one origin; only differences are used.
  auto watch = std::make_shared<Stopwatch>();
  return [watch] { return watch->millis(); };
}

double AbbaResult::ratio(size_t a, size_t b) const {
  return timings.at(a).median_ms / timings.at(b).median_ms;
}

std::vector<size_t> abba_order(size_t variants, int rounds) {
  std::vector<size_t> order;
  for (int r = 0; r < rounds; ++r)
    for (size_t n = 0; n < variants; ++n) order.push_back(r % 2 == 0 ? n : variants - 1 - n);
  return order;
}

AbbaResult run_abba(const std::vector<Variant>& variants, const AbbaOptions& options,
                    const Clock& clock) {
  if (variants.empty()) throw std::logic_error("run_abba: no variant");
  AbbaResult result;
  for (const auto& v : variants) result.names.push_back(v.name);
  result.ms.resize(variants.size());
  result.order = abba_order(variants.size(), options.warmup + options.rounds);
  for (size_t call = 0; call < result.order.size(); ++call) {
    const int round = static_cast<int>(call / variants.size());
    const size_t n = result.order[call];
    if (variants[n].prepare) variants[n].prepare(round);
    const double start = clock();
    variants[n].run(round);
    const double ms = clock() - start;
    if (round >= options.warmup) result.ms[n].push_back(ms);
  }
  for (const auto& ms : result.ms) result.timings.push_back(summarize(ms));
  return result;
}

Timing time_repeats(int repeats, const std::function<void()>& run, int warmup, const Clock& clock) {
  const Variant variant{"", {}, [&run](int) { run(); }};
  return run_abba({variant}, {warmup, repeats}, clock).timings.front();
}

}  // namespace detrain::bench
