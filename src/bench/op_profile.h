// A by-operator profile of what the calling thread runs while it is on: every ATen operator and
// autograd node (LibTorch's RecordFunction, the events PyTorch's autograd profiler tables),
// with its self time (its own duration less the operators it called) summed by name. On the
// CPU a training step runs on the calling thread, forward and backward alike (the autograd
// engine runs a CPU graph there), and an intra-op parallel region runs inside the operator that
// opened it, so the self times add up to the step's time (`bench step --profile`).
#pragma once

#include <ATen/record_function.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace detrain::bench {

struct OpTime {
  std::string name;    // "aten::convolution_backward", "ConvolutionBackward0", ...
  double self_ms = 0;  // summed over the profiled span
  int64_t calls = 0;
};

class OpProfiler {
 public:
  // Starts profiling the calling thread; one profiler per thread at a time.
  OpProfiler();
  ~OpProfiler();  // stops, if stop() was not called
  OpProfiler(const OpProfiler&) = delete;
  OpProfiler& operator=(const OpProfiler&) = delete;

  // Stops; the figures stay readable. Call on the thread that started it.
  void stop();
  // Wall milliseconds between start and stop.
  double span_ms() const { return span_ms_; }
  // Operators by self time, largest first (all of them for n <= 0).
  std::vector<OpTime> top(int64_t n) const;
  // Sum of every operator's self time: the span's time spent inside some operator.
  double total_self_ms() const;

  // For the RecordFunction callbacks (op_profile.cpp).
  void add(const char* name, int64_t self_ns);

 private:
  at::CallbackHandle handle_ = 0;
  bool running_ = false;
  std::chrono::steady_clock::time_point start_;
  double span_ms_ = 0;
  std::unordered_map<std::string, OpTime> by_name_;
};

}  // namespace detrain::bench
