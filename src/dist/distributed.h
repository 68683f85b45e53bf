// Data-parallel glue on PyTorch's c10d (LibTorch has no C++ DistributedDataParallel wrapper):
// the process group from the standard launch environment (RANK/WORLD_SIZE/... as torchrun and
// `detrain train --nproc` set them, or Slurm's SLURM_*), a TCP store, Gloo on CPU and NCCL on
// CUDA, and the collectives the trainer needs: parameter broadcast from rank 0, small sums for
// normalisers and stop/finite consensus, a weights check, and the c10d ProcessGroup that
// grad_reducer.h drives DDP's reducer on (gradients all-reduced while backward runs). Every
// failure becomes a DistributedError naming this rank, the collective and the rank(s) that did
// not arrive.
#pragma once

#include <torch/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/replicas.h"

namespace c10d {
class ProcessGroup;
}  // namespace c10d

namespace detrain::dist {

// Who this process is in a multi-process run.
struct DistEnv {
  int64_t rank = 0;
  int64_t world_size = 1;
  int64_t local_rank = 0;
  int64_t local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string source = "none";  // "env" (RANK/WORLD_SIZE), "slurm" or "none"
  // torchrun (TORCHELASTIC_USE_AGENT_STORE=True): its agent already hosts the store on
  // MASTER_ADDR:MASTER_PORT, so every rank, rank 0 included, connects as a client.
  bool agent_store = false;
  // Which attempt of the job this is: torchrun's TORCHELASTIC_RESTART_COUNT (it restarts every
  // rank after one fails, up to --max-restarts) and Slurm's SLURM_RESTART_COUNT (a requeued
  // job); 0 on the first attempt.
  int64_t elastic_restarts = 0;
  int64_t slurm_restarts = 0;
  bool distributed() const { return world_size > 1; }
  bool restarted() const { return elastic_restarts > 0 || slurm_restarts > 0; }
  // "attempt-<torchrun>.<slurm>": the store prefix of this attempt, so restarted ranks never
  // read the keys (Gloo's addresses, pids, progress) that the previous attempt left in a store
  // that outlived it (torchrun's agent store does).
  std::string attempt() const;
};

// Reads RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT; without
// RANK/WORLD_SIZE, Slurm's SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE
// and SLURM_LAUNCH_NODE_IPADDR (MASTER_ADDR wins when set); TORCHELASTIC_USE_AGENT_STORE; the
// restart counters TORCHELASTIC_RESTART_COUNT and SLURM_RESTART_COUNT. Throws
// ConfigError naming the variable when one is malformed or inconsistent. `getenv` is injectable for
// tests.
DistEnv read_dist_env(const std::function<const char*(const char*)>& getenv = {});

class Distributed {
 public:
  // Connects to the store (rank 0 hosts it on MASTER_ADDR:MASTER_PORT) and creates the process
  // group (nccl when `device` is CUDA, else gloo). Waits at most `timeout` for the others.
  Distributed(const DistEnv& env, const torch::Device& device, std::chrono::milliseconds timeout);
  ~Distributed();
  Distributed(const Distributed&) = delete;
  Distributed& operator=(const Distributed&) = delete;

  int64_t rank() const { return env_.rank; }
  int64_t world_size() const { return env_.world_size; }
  bool is_main() const { return env_.rank == 0; }
  const DistEnv& env() const { return env_; }

  // Every collective below must be called by every rank in the same order. `what` names it in
  // error messages.

  // Copies rank 0's values into `tensors` on every rank (flat buffer per dtype).
  void broadcast(const std::vector<torch::Tensor>& tensors, const std::string& what);
  // grad <- mean over ranks of grad, in flat fp32 buckets of at most `bucket_bytes`, after
  // backward (a stopped run's pending micro-batch gradients; training steps reduce while
  // backward runs, grad_reducer.h). Missing gradients count as zeros (and become defined) so
  // every rank's bucket layout agrees.
  void average_gradients(const std::vector<torch::Tensor>& params, int64_t bucket_bytes);
  // Element-wise sum over ranks (a new tensor; fp32 on the wire for reduced floating types).
  torch::Tensor sum(const torch::Tensor& t, const std::string& what);
  // True when `flag` is true on any rank.
  bool any(bool flag, const std::string& what);
  // Element i is true when flags[i] is true on any rank (one all-reduce for all of them).
  std::vector<bool> any_of(const std::vector<bool>& flags, const std::string& what);
  // One value per rank, in rank order (all ranks get all of them).
  std::vector<int64_t> all_gather(int64_t value, const std::string& what);
  void barrier(const std::string& what);

  // Rank 0 tells the others it reached `key`; the others wait up to `timeout` (through the
  // store, so an epoch's validation on rank 0 may outlast the collective timeout).
  void notify(const std::string& key);
  void wait_for(const std::string& key, std::chrono::milliseconds timeout);
  // Rank 0's `value` on every rank (through the store; rank 0 returns its own).
  std::string from_main(const std::string& key, const std::string& value);

  // Marks where this rank is (e.g. "epoch 2 iteration 15"); failures name ranks that are
  // elsewhere. One store write, so call it once per iteration, not per collective.
  void set_progress(int64_t tick, const std::string& where);

  // Sum over this group, for synchronised BatchNorm and the loss normalisers.
  Replicas replicas();

  // Runs `body`, which waits on collectives this class did not start (a backward pass whose
  // gradient buckets c10d::Reducer all-reduces); what it throws becomes the DistributedError
  // naming `what` and the ranks that did not arrive, as every collective above does.
  void run_collective(const std::string& what, const std::function<void()>& body);
  // c10d's ProcessGroup over this rank's backend (c10d::Reducer takes one); it lives as long as
  // this object. Never null once constructed.
  c10d::ProcessGroup* process_group() const;

 private:
  struct Impl;
  [[noreturn]] void fail(const std::string& what, const std::exception& e) const;

  DistEnv env_;
  std::unique_ptr<Impl> impl_;
};

// A 64-bit hash of the bytes of `tensors` (dist_verify: equal weights have equal hashes).
int64_t tensors_hash(const std::vector<torch::Tensor>& tensors);

}  // namespace detrain::dist
