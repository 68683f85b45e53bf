// Who runs the training loop: one process, or one rank of a c10d group (distributed.h). The
// loop calls the same methods either way and never asks which: a single process's collectives
// do nothing (any() returns its own flag, from_main() its own value), so the iteration reads
// the same for one process and for N ranks.
#pragma once

#include <torch/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/replicas.h"
#include "config/config.h"
#include "dist/distributed.h"

namespace detrain::dist {

class World {
 public:
  virtual ~World() = default;
  virtual int64_t rank() const = 0;
  virtual int64_t size() const = 0;
  bool is_main() const { return rank() == 0; }
  // Sums over the ranks (synchronised BatchNorm, loss normalisers); null for one process.
  virtual std::shared_ptr<const Replicas> replicas() const = 0;

  // Collectives: every rank calls them in the same order; `what` names them in errors.
  virtual void set_progress(int64_t tick, const std::string& where) = 0;
  virtual bool any(bool flag, const std::string& what) = 0;
  // any() of several flags in one collective: element i is true when flags[i] is on any rank.
  virtual std::vector<bool> any_of(const std::vector<bool>& flags, const std::string& what) = 0;
  virtual void broadcast(const std::vector<torch::Tensor>& tensors, const std::string& what) = 0;
  // loss.backward() for this rank's micro-batch; `params` are the trainable parameters, the
  // same tensors on every call. `reduce` (the micro-batch that ends an optimizer step, alike on
  // every rank): the gradients end as the mean over the ranks, all-reduced in buckets of
  // train.dist_bucket_mb while backward runs (grad_reducer.h); otherwise they accumulate
  // locally without communication.
  virtual void backward(const torch::Tensor& loss, const std::vector<torch::Tensor>& params,
                        bool reduce) = 0;
  // grad <- mean over ranks after backward: a stopped run's pending micro-batch gradients.
  virtual void average_gradients(const std::vector<torch::Tensor>& params) = 0;
  // One line on the reducing steps' all-reduce and how much of it backward hid ("" when
  // nothing was reduced).
  virtual std::string overlap_report() = 0;
  // DistributedError when another rank's `state` differs from rank 0's (train.dist_verify).
  virtual void check_same(const std::vector<torch::Tensor>& state, const std::string& when) = 0;
  virtual void barrier(const std::string& what) = 0;
  // Rank 0 says it reached `key`; the others wait for it up to train.dist_timeout_s.
  virtual void notify(const std::string& key) = 0;
  virtual void wait_for(const std::string& key) = 0;
  // Rank 0's `value` on every rank.
  virtual std::string from_main(const std::string& key, const std::string& value) = 0;
};

// The launch environment and where this process computes: read before the data scan so a bad
// variable fails first; the process group itself comes later (make_world).
struct Placement {
  DistEnv env;
  torch::Device device{torch::kCPU};
  std::string runtime_summary;  // threads, BLAS, OpenCV (for the log)
};
// Reads the launch variables, applies runtime.* (ranks on one machine share its cores unless
// runtime.threads says otherwise) and picks this rank's device (cuda:LOCAL_RANK when CUDA).
Placement place_process(const config::Experiment& x);

// One process when `placement.env` is not distributed, else joins the c10d group (ConfigError
// when data.batch does not divide over the ranks).
std::unique_ptr<World> make_world(const Placement& placement, const config::Experiment& x);

}  // namespace detrain::dist
