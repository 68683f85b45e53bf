// Newton-Schulz on ATen's own matmuls; see ns_native.h.
#include "optim/ns_native.h"

#include <ATen/ATen.h>

#include <utility>

#include "optim/newton_schulz.h"
#include "optim/ns_schedule.h"

namespace detrain::optim {

NsNativeStack::NsNativeStack(int64_t count, int64_t rows, int64_t cols,
                             const at::TensorOptions& options) {
  TORCH_CHECK(count > 0 && rows > 0 && rows <= cols, "NsNativeStack takes wide stacks, got [",
              count, ", ", rows, ", ", cols, "]");
  x_ = at::zeros({count, rows, cols}, options);
  y_ = at::empty({count, rows, cols}, options);
  a_ = at::empty({count, rows, rows}, options);
  b_ = at::empty({count, rows, rows}, options);
}

double NsNativeStack::flop() const {
  const auto k = static_cast<double>(x_.size(0));
  const auto r = static_cast<double>(x_.size(1)), c = static_cast<double>(x_.size(2));
  return k * kNsSteps * (4 * r * r * c + 2 * r * r * r);
}

void NsNativeStack::iterate() {
  // The coefficients as Python floats (doubles), as the reference passes them to baddbmm.
  for (int step = 0; step < kNsSteps; ++step) {
    at::bmm_out(a_, x_, x_.transpose(-2, -1));    // A = X X^T
    at::baddbmm_out(b_, a_, a_, a_, kNsB, kNsC);  // B = b A + c A A
    at::baddbmm_out(y_, x_, b_, x_, kNsA, 1.0);   // Y = a X + B X
    std::swap(x_, y_);
  }
}

void iterate_native_all(const std::vector<NsNativeStack*>& stacks) {
  // A stack's cost: its arithmetic plus its 15 op calls' fixed cost (~10 us per oneDNN matmul
  // call on small matrices, ~1e6 flop at a core's bf16 rate).
  constexpr double kCallCost = 1e6;
  std::vector<NsNativeStack*> on_cpu;
  std::vector<double> costs;
  for (auto* stack : stacks) {
    if (!stack->x().device().is_cpu()) {
      stack->iterate();  // queued on its device
      continue;
    }
    on_cpu.push_back(stack);
    costs.push_back(stack->flop() + 3 * kNsSteps * kCallCost);
  }
  run_balanced(costs, [&](size_t i) { on_cpu[i]->iterate(); });
}

}  // namespace detrain::optim
