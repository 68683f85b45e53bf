// How the CPU Newton-Schulz kernels spread independent pieces of work (a matrix, a stack) over
// LibTorch's intra-op threads: largest first to the least loaded thread, then one parallel
// region in which each thread runs its own list. Small gemms scale poorly when the BLAS threads
// each one, so both kernels give every piece to one thread instead.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace detrain::optim {

// Lists of piece indices, one per lane: each piece (by `costs`, any unit) goes, largest first
// and ties in index order, to the lane with the least cost so far.
std::vector<std::vector<size_t>> balance_lanes(const std::vector<double>& costs, size_t lanes);

// work(i) for every piece i, balanced over the intra-op threads (one lane inside a parallel
// region already). A single piece runs outside any region, its ops threaded by LibTorch (the
// per-parameter path's large matrices).
void run_balanced(const std::vector<double>& costs, const std::function<void(size_t)>& work);

}  // namespace detrain::optim
