// See ns_schedule.h.
#include "optim/ns_schedule.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <numeric>

namespace detrain::optim {

std::vector<std::vector<size_t>> balance_lanes(const std::vector<double>& costs, size_t lanes) {
  std::vector<size_t> order(costs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t l, size_t r) { return costs[l] > costs[r]; });
  std::vector<std::vector<size_t>> out(std::max<size_t>(lanes, 1));
  std::vector<double> load(out.size(), 0.0);
  for (const size_t piece : order) {
    const auto lane =
        static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    out[lane].push_back(piece);
    load[lane] += costs[piece];
  }
  return out;
}

void run_balanced(const std::vector<double>& costs, const std::function<void(size_t)>& work) {
  if (costs.empty()) return;
  if (costs.size() == 1) {  // no region: LibTorch's threads share the piece's ops
    work(0);
    return;
  }
  const int threads = at::in_parallel_region() ? 1 : std::max(1, at::get_num_threads());
  const auto lanes = balance_lanes(costs, static_cast<size_t>(threads));
  // Grain 1 over `threads` lanes: each intra-op thread takes exactly one lane.
  at::parallel_for(0, threads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t lane = begin; lane < end; ++lane)
      for (const size_t piece : lanes[static_cast<size_t>(lane)]) work(piece);
  });
}

}  // namespace detrain::optim
