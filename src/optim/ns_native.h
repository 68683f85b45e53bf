// The five quintic Newton-Schulz steps as Ultralytics 8.4.190 writes them, with ATen's own
// batched matmuls in the compute dtype on preallocated buffers: per step A = X X^T (bmm), then
// B = b A + c A A and Y = a X + B X (baddbmm). In bf16 on the CPU these are oneDNN's brgemm
// kernels: products accumulate in fp32 and each op rounds once to bf16 (tested against an fp32
// product rounded once), the reference's own arithmetic; on CUDA, cuBLAS's.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace detrain::optim {

class NsNativeStack {
 public:
  // rows <= cols (wide); `options` gives the compute dtype and the device.
  NsNativeStack(int64_t count, int64_t rows, int64_t cols, const at::TensorOptions& options);

  // [count, rows, cols]: load the normalised input here; holds the result after iterate.
  const at::Tensor& x() const { return x_; }
  // Arithmetic of the whole stack's five steps (the scheduling weight on the CPU).
  double flop() const;
  // The five steps on the whole stack, one op call per line (15 per stack). Outside a parallel
  // region the ops use LibTorch's threads; inside one (iterate_native_all) they run on one.
  void iterate();

 private:
  at::Tensor x_, y_;  // [count, rows, cols]: X and the next X (swapped after each step)
  at::Tensor a_, b_;  // [count, rows, rows]: A = X X^T and B
};

// iterate() on every stack. On the CPU the stacks go, largest first, to the least loaded
// intra-op thread, each running its batched ops single-threaded (measured faster than letting
// oneDNN thread each small op); elsewhere they are queued one after another.
void iterate_native_all(const std::vector<NsNativeStack*>& stacks);

}  // namespace detrain::optim
