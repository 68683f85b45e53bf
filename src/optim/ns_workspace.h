// Preallocated fp32 buffers and the CPU kernel of the five quintic Newton-Schulz steps for a
// stack of wide [r, c] matrices: per matrix and step three gemms (at::mm_out into the buffers)
// and three elementwise passes. In bf16 mode the passes round to bf16 (kept in fp32 storage)
// exactly where the reference's bf16 ops round, so no .to() round trips are needed.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace detrain::optim {

// The quintic's coefficients as the compute dtype's elementwise ops apply them, and whether
// every intermediate rounds to bf16. LibTorch 1.13 rounds a scalar to the tensor's dtype before
// a bf16 multiply (checked against its kernels), so bf16 mode uses bf16(a), bf16(b), bf16(c).
struct NsCoefficients {
  float a = 0, b = 0, c = 0;
  bool round_bf16 = false;
};
NsCoefficients ns_coefficients(at::ScalarType compute);

class NsWorkspace {
 public:
  NsWorkspace(int64_t count, int64_t rows, int64_t cols);  // rows <= cols (wide)

  // [count, rows, cols] fp32: load the normalised input here; holds the result after iterate.
  const at::Tensor& x() const { return x_; }
  int64_t count() const { return count_; }
  // Arithmetic of one slice's five steps (the bench's GFLOP count uses the same formula).
  double slice_flop() const;
  // The five steps on slice `slice`. Outside a parallel region the gemms use BLAS's threads;
  // inside one (iterate_all) they run single-threaded.
  void iterate(int64_t slice, const NsCoefficients& k);

 private:
  int64_t count_, rows_, cols_;
  at::Tensor x_, y_;  // [count, rows, cols]: X and the product B X
  at::Tensor a_, b_;  // [count, rows, rows]: A = X X^T and B
};

// iterate() on every slice of every workspace in one parallel region (ns_schedule: largest
// first to the least loaded intra-op thread), each slice a chain of single-threaded gemms.
void iterate_all(const std::vector<NsWorkspace*>& workspaces, const NsCoefficients& k);

}  // namespace detrain::optim
