// The two worlds of world.h: a single process, and a c10d rank over Distributed.
#include "dist/world.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <thread>

#include "common/cores.h"
#include "common/errors.h"
#include "compat/runtime.h"
#include "compat/torch_compat.h"
#include "dist/grad_reducer.h"

namespace detrain::dist {

namespace {

class SingleProcess final : public World {
 public:
  int64_t rank() const override { return 0; }
  int64_t size() const override { return 1; }
  std::shared_ptr<const Replicas> replicas() const override { return nullptr; }
  void set_progress(int64_t, const std::string&) override {}
  bool any(bool flag, const std::string&) override { return flag; }
  std::vector<bool> any_of(const std::vector<bool>& flags, const std::string&) override {
    return flags;
  }
  void broadcast(const std::vector<torch::Tensor>&, const std::string&) override {}
  void backward(const torch::Tensor& loss, const std::vector<torch::Tensor>&, bool) override {
    loss.backward();
  }
  void average_gradients(const std::vector<torch::Tensor>&) override {}
  std::string overlap_report() override { return ""; }
  void check_same(const std::vector<torch::Tensor>&, const std::string&) override {}
  void barrier(const std::string&) override {}
  void notify(const std::string&) override {}
  void wait_for(const std::string&) override {}
  std::string from_main(const std::string&, const std::string& value) override { return value; }
};

class C10dRank final : public World {
 public:
  C10dRank(const Placement& placement, const config::TrainOptions& train)
      : timeout_(static_cast<int64_t>(train.dist_timeout_s * 1000)),
        bucket_bytes_(static_cast<int64_t>(train.dist_bucket_mb * 1024 * 1024)),
        reducer_options_{bucket_bytes_, parse_grad_compression(train.dist_grad_compression)},
        dist_(placement.env, placement.device, timeout_),
        replicas_(std::make_shared<const Replicas>(dist_.replicas())) {}

  int64_t rank() const override { return dist_.rank(); }
  int64_t size() const override { return dist_.world_size(); }
  std::shared_ptr<const Replicas> replicas() const override { return replicas_; }
  void set_progress(int64_t tick, const std::string& where) override {
    dist_.set_progress(tick, where);
  }
  bool any(bool flag, const std::string& what) override { return dist_.any(flag, what); }
  std::vector<bool> any_of(const std::vector<bool>& flags, const std::string& what) override {
    return dist_.any_of(flags, what);
  }
  void broadcast(const std::vector<torch::Tensor>& tensors, const std::string& what) override {
    dist_.broadcast(tensors, what);
  }
  void backward(const torch::Tensor& loss, const std::vector<torch::Tensor>& params,
                bool reduce) override {
    // Built at the first backward, so its hooks see every micro-batch (a parameter used only
    // in a micro-batch that does not reduce still counts as used) and the parameters are in
    // their final place and layout.
    if (!reducer_) reducer_ = std::make_unique<GradReducer>(dist_, params, reducer_options_);
    reducer_->backward(loss, reduce);
  }
  void average_gradients(const std::vector<torch::Tensor>& params) override {
    dist_.average_gradients(params, bucket_bytes_);
  }
  std::string overlap_report() override {
    const OverlapStats s = reducer_ ? reducer_->overlap_stats() : OverlapStats{};
    if (s.steps == 0) return "";
    return fmt::format(
        "gradient all-reduce (rank {}, mean of {} optimizer steps after the first): {:.1f} ms, "
        "of which {:.1f} ms ({:.0f}%) while backward computed ({:.1f} ms)",
        dist_.rank(), s.steps, s.allreduce_ms, s.overlap_ms,
        s.allreduce_ms > 0 ? 100.0 * s.overlap_ms / s.allreduce_ms : 0.0, s.compute_ms);
  }
  void check_same(const std::vector<torch::Tensor>& state, const std::string& when) override {
    const auto hashes = dist_.all_gather(tensors_hash(state), "the weights check");
    for (size_t r = 1; r < hashes.size(); ++r)
      if (hashes[r] != hashes[0])
        throw DistributedError(fmt::format(
            "rank {}: {}, rank {}'s weights or EMA differ from rank 0's (train.dist_verify); "
            "this is a bug, please report it",
            dist_.rank(), when, r));
  }
  void barrier(const std::string& what) override { dist_.barrier(what); }
  void notify(const std::string& key) override { dist_.notify(key); }
  void wait_for(const std::string& key) override { dist_.wait_for(key, timeout_); }
  std::string from_main(const std::string& key, const std::string& value) override {
    return dist_.from_main(key, value);
  }

 private:
  std::chrono::milliseconds timeout_;
  int64_t bucket_bytes_;
  GradReducerOptions reducer_options_;
  Distributed dist_;
  std::shared_ptr<const Replicas> replicas_;
  std::unique_ptr<GradReducer> reducer_;  // after dist_: goes before the group it uses
};

}  // namespace

Placement place_process(const config::Experiment& x) {
  Placement p;
  p.env = read_dist_env();
  config::RuntimeOptions runtime_options = x.runtime;
  if (p.env.distributed()) {
    if (p.env.rank > 0) spdlog::set_level(spdlog::level::warn);  // one stream of logs
    if (runtime_options.threads == 0)
      runtime_options.threads =
          std::max<int64_t>(1, static_cast<int64_t>(usable_cores()) / p.env.local_world_size);
  }
  p.runtime_summary = compat::apply_runtime(runtime_options).summary();
  p.device = compat::parse_device(x.runtime.device);
  if (p.env.distributed() && p.device.is_cuda())
    p.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(p.env.local_rank));
  return p;
}

std::unique_ptr<World> make_world(const Placement& placement, const config::Experiment& x) {
  const DistEnv& env = placement.env;
  if (!env.distributed()) return std::make_unique<SingleProcess>();
  if (x.data.batch % env.world_size != 0)
    throw ConfigError(
        fmt::format("data.batch={} is the global batch and must divide evenly "
                    "over {} ranks; use a multiple of {}",
                    x.data.batch, env.world_size, env.world_size));
  auto world = std::make_unique<C10dRank>(placement, x.train);
  spdlog::info("distributed: rank {} of {} (local {} of {}, {}), store {}:{}{}", env.rank,
               env.world_size, env.local_rank, env.local_world_size,
               placement.device.is_cuda() ? "nccl" : "gloo", env.master_addr, env.master_port,
               env.restarted() ? fmt::format(", restart {} (torchrun) / {} (Slurm)",
                                             env.elastic_restarts, env.slurm_restarts)
                               : "");
  return world;
}

}  // namespace detrain::dist
