// Gradient averaging that overlaps backward: PyTorch DDP's engine, c10d::Reducer, driven from
// C++ the way torch/nn/parallel/distributed.py drives it (LibTorch exports the reducer but has
// no C++ wrapper). The trainable parameters are cut into buckets of at most
// train.dist_bucket_mb in registration order, the first one (the stem's) capped at 1 MB, and
// the buckets are reduced last-first: the head's gradients, which backward produces first, go
// out first. A hook on each parameter's gradient accumulator copies the gradient into its
// bucket; a full bucket's all-reduce starts at once while backward goes on with the layers
// below, and backward returns when every bucket is reduced and copied back: grad = mean over
// the ranks, as Distributed::average_gradients gave after backward.
//
// - Accumulation (DDP's no_sync): a micro-batch that does not end an optimizer step runs a
//   plain backward (the reducer's hooks ignore it), so its gradients accumulate locally; the
//   micro-batch that ends the step reduces the accumulated sums.
// - Unused parameters (DDP's find_unused_parameters): before a reducing backward the reducer
//   walks the autograd graph from the loss, and a parameter outside it is marked ready with
//   the gradient it already has (zeros when none), so its bucket goes out and no rank waits
//   for a gradient that never comes. A parameter no rank used, in any micro-batch of the step,
//   keeps its gradient untouched, as one process would.
// - Compression (train.dist_grad_compression): bf16 or fp16 on the wire; each bucket is divided
//   by the world size in fp32, rounded, summed and widened back.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dist/distributed.h"

namespace detrain::dist {

enum class GradCompression { kNone, kBf16, kFp16 };

// "none", "bf16" or "fp16" (train.dist_grad_compression); ConfigError naming the key otherwise.
GradCompression parse_grad_compression(const std::string& name);

struct GradReducerOptions {
  int64_t bucket_bytes = 25 * 1024 * 1024;  // train.dist_bucket_mb
  GradCompression compression = GradCompression::kNone;
};

// What the reducer's timers measured, per reducing step (ms), over the steps after the first:
// backward's compute (from the reducing backward's start to its last gradient), the all-reduce
// (from the first bucket's launch to the last bucket copied back) and how much of the
// all-reduce ran while backward was still computing.
struct OverlapStats {
  int64_t steps = 0;  // reducing backward passes measured
  double compute_ms = 0, allreduce_ms = 0, overlap_ms = 0;
};

class GradReducer {
 public:
  // `params` are the trainable parameters, the same tensors for the whole run; they must be on
  // their device and in their memory format already (the buckets copy their strides).
  GradReducer(Distributed& dist, const std::vector<torch::Tensor>& params,
              const GradReducerOptions& options);
  ~GradReducer();
  GradReducer(const GradReducer&) = delete;
  GradReducer& operator=(const GradReducer&) = delete;

  // loss.backward() for this rank's micro-batch. `reduce`: the micro-batch ends an optimizer
  // step, so every rank calls it with `reduce` alike and the gradients end as the mean over the
  // ranks; otherwise they accumulate locally with no communication.
  void backward(const torch::Tensor& loss, bool reduce);

  OverlapStats overlap_stats();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace detrain::dist
