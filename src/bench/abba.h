// The one timing runner of `detrain bench`. A variant is a callable to time; the runner calls
// every variant once per round and reverses the order every other round (two variants: A B,
// B A, A B, ...; three: A B C, C B A, ...), so a load that drifts during the run (other
// processes on the machine) hits each variant alike. The first `warmup` rounds are not kept
// (allocator and kernel selection, lazily built state). Per variant it keeps the minimum,
// median and maximum; the ratio of two medians compares variants measured side by side.
// A single variant is the plain case: warm-up, then repeats.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace detrain::bench {

struct Timing {
  double min_ms = 0, median_ms = 0, max_ms = 0;
};

// Min, median (the upper one of an even count) and max of `ms`; all 0 when it is empty.
Timing summarize(std::vector<double> ms);

struct Variant {
  std::string name;
  // Untimed work before each timed call (loading fixed inputs, a device sync); may be empty.
  std::function<void(int round)> prepare;
  // The timed call; `round` counts from 0 over warm-up and timed rounds alike.
  std::function<void(int round)> run;
};

// Milliseconds on a monotonic clock; tests pass a fake one.
using Clock = std::function<double()>;
Clock steady_clock_ms();

struct AbbaOptions {
  int warmup = 1;
  int rounds = 5;  // timed rounds after the warm-up
};

struct AbbaResult {
  std::vector<std::string> names;       // as the variants were given
  std::vector<std::vector<double>> ms;  // per variant, the timed rounds in run order
  std::vector<Timing> timings;          // per variant
  std::vector<size_t> order;            // every call made, as variant indices
  // median of variant a / median of variant b.
  double ratio(size_t a, size_t b) const;
};

// The variant index sequence of `rounds` rounds over `variants` variants.
std::vector<size_t> abba_order(size_t variants, int rounds);

AbbaResult run_abba(const std::vector<Variant>& variants, const AbbaOptions& options,
                    const Clock& clock = steady_clock_ms());

// One callable: `warmup` untimed calls, then `repeats` timed ones.
Timing time_repeats(int repeats, const std::function<void()>& run, int warmup = 1,
                    const Clock& clock = steady_clock_ms());

}  // namespace detrain::bench
