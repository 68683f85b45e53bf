// c10d::Reducer driven from C++; see grad_reducer.h. Everything c10d stays in this unit.
#include "dist/grad_reducer.h"

#include <algorithm>

#include "common/errors.h"

#if defined(DETRAIN_WITH_C10D)
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/default_comm_hooks.hpp>
#include <torch/csrc/distributed/c10d/logger.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>
#endif

namespace detrain::dist {

GradCompression parse_grad_compression(const std::string& name) {
  if (name == "none") return GradCompression::kNone;
  if (name == "bf16") return GradCompression::kBf16;
  if (name == "fp16") return GradCompression::kFp16;
  throw ConfigError("train.dist_grad_compression=" + name + " is not one of none, bf16, fp16");
}

#if defined(DETRAIN_WITH_C10D)

namespace {

using GroupPtr = c10::intrusive_ptr<c10d::ProcessGroup>;

// bf16 on the wire. The fp32 bucket is divided by the world size first, so the bf16 sum stays
// within range wherever the mean is, and one rounding per rank plus one per addition is all the
// precision lost (relative 2^-8 each). LibTorch's built-in hooks offer fp16 only.
class Bf16WireHook final : public c10d::CppCommHookInterface<GroupPtr> {
 public:
  explicit Bf16WireHook(const GroupPtr& group) : c10d::CppCommHookInterface<GroupPtr>(group) {}

  c10::intrusive_ptr<c10::ivalue::Future> runHook(c10d::GradBucket& bucket) override {
    at::Tensor bucket_buffer = bucket.getBufferRef();  // [n] fp32, the reducer's
    bucket_buffer.div_(static_cast<double>(state_->getSize()));
    std::vector<at::Tensor> wire{bucket_buffer.to(at::kBFloat16)};
    const auto summed = state_->allreduce(wire)->getFuture();
    return summed->then(
        [bucket_buffer](c10::ivalue::Future& done) {
          bucket_buffer.copy_(done.value().toTensorVector().at(0));
          return c10::IValue(bucket_buffer);
        },
        c10::TensorType::get());
  }
};

int64_t int_of(const at::DDPLoggingData& data, const char* key) {
  const auto it = data.ints_map.find(key);
  return it == data.ints_map.end() ? -1 : it->second;
}

}  // namespace

struct GradReducer::Impl {
  Distributed& dist;
  std::shared_ptr<c10d::Reducer> reducer;  // null without trainable parameters
  std::shared_ptr<c10d::Logger> logger;    // reads the reducer's timers (DDP's runtime stats)
  int64_t reducing_steps = 0;
  int64_t steps_read = 0;  // reducing steps whose timings have been read
  int64_t measured = 0;    // of those, the ones summed below (all but the first)
  int64_t compute_ns = 0, allreduce_ns = 0, overlap_ns = 0;

  explicit Impl(Distributed& d) : dist(d) {}

  // The logger takes a step's timestamps from the reducer when the next step starts (DDP's
  // forward calls it); read them then, or at the end for the last step. The first step is left
  // out: it allocates what the others reuse.
  void read_timings() {
    if (steps_read == reducing_steps) return;
    logger->set_runtime_stats_and_log();
    const at::DDPLoggingData data = logger->get_ddp_logging_data();
    const int64_t compute_start = int_of(data, "backward_compute_time_start"),
                  compute_end = int_of(data, "backward_compute_time_end"),
                  comm_start = int_of(data, "backward_comm_time_start"),
                  comm_end = int_of(data, "backward_comm_time_end");
    if (steps_read++ == 0 || compute_start <= 0 || compute_end < compute_start || comm_start <= 0 ||
        comm_end < comm_start)
      return;
    ++measured;
    compute_ns += compute_end - compute_start;
    allreduce_ns += comm_end - comm_start;
    overlap_ns += std::max<int64_t>(0, std::min(compute_end, comm_end) - comm_start);
  }
};

GradReducer::GradReducer(Distributed& dist, const std::vector<torch::Tensor>& params,
                         const GradReducerOptions& options)
    : impl_(std::make_unique<Impl>(dist)) {
  if (params.empty()) return;  // everything frozen: nothing to reduce
  const GroupPtr group = GroupPtr::reclaim_copy(dist.process_group());
  const auto bucket_bytes = static_cast<size_t>(std::max<int64_t>(options.bucket_bytes, 1));
  const size_t first_bytes = std::min<size_t>(c10d::kDefaultFirstBucketBytes, bucket_bytes);
  // Buckets over the parameters in registration order (the stem's first, capped at 1 MB), then
  // listed last-first: the order backward produces the gradients in, roughly.
  auto [buckets, limits] =
      c10d::compute_bucket_assignment_by_size(params, {first_bytes, bucket_bytes});
  std::reverse(buckets.begin(), buckets.end());
  impl_->reducer = std::make_shared<c10d::Reducer>(
      params, std::move(buckets), group, std::vector<bool>(params.size(), false),
      static_cast<int64_t>(bucket_bytes), /*find_unused_parameters=*/true,
      // Gradients stay tensors of their own (the optimizers gather them into their own stacks).
      /*gradient_as_bucket_view=*/false, std::unordered_map<size_t, std::string>{},
      static_cast<int64_t>(first_bytes), /*skip_all_reduce_unused_params=*/false,
      /*use_python_reducer=*/false, std::vector<int64_t>{});
  switch (options.compression) {
    case GradCompression::kNone:
      break;  // the reducer's own: divide while copying into the bucket, then sum
    case GradCompression::kBf16:
      impl_->reducer->register_comm_hook(std::make_unique<Bf16WireHook>(group));
      break;
    case GradCompression::kFp16:
      impl_->reducer->register_builtin_comm_hook(c10d::BuiltinCommHookType::FP16_COMPRESS);
      break;
  }
  impl_->logger = std::make_shared<c10d::Logger>(impl_->reducer);
  impl_->reducer->set_logger(impl_->logger);
  // Time every step (a handful of clock reads), not DDP's default of 1 in 100.
  impl_->reducer->set_ddp_runtime_logging_sample_rate(1);
}

GradReducer::~GradReducer() = default;

void GradReducer::backward(const torch::Tensor& loss, bool reduce) {
  if (!reduce || !impl_->reducer) {
    loss.backward();
    return;
  }
  impl_->dist.run_collective("the backward pass with its gradient all-reduce", [&] {
    impl_->read_timings();
    // prepare_for_forward counts the iteration (the reducer's timers sample by it).
    impl_->reducer->prepare_for_forward();
    impl_->reducer->prepare_for_backward({loss});
    loss.backward();
  });
  ++impl_->reducing_steps;
}

OverlapStats GradReducer::overlap_stats() {
  OverlapStats s;
  if (!impl_->reducer) return s;
  impl_->read_timings();
  if (impl_->measured == 0) return s;
  const double per_step_ms = 1e-6 / static_cast<double>(impl_->measured);
  s.steps = impl_->measured;
  s.compute_ms = static_cast<double>(impl_->compute_ns) * per_step_ms;
  s.allreduce_ms = static_cast<double>(impl_->allreduce_ns) * per_step_ms;
  s.overlap_ms = static_cast<double>(impl_->overlap_ns) * per_step_ms;
  return s;
}

#else  // no c10d in this LibTorch: Distributed cannot be constructed, so neither can this

struct GradReducer::Impl {};

GradReducer::GradReducer(Distributed&, const std::vector<torch::Tensor>&,
                         const GradReducerOptions&) {
  throw DistributedError("this detrain was built without c10d; it cannot reduce gradients");
}
GradReducer::~GradReducer() = default;
void GradReducer::backward(const torch::Tensor& loss, bool) { loss.backward(); }
OverlapStats GradReducer::overlap_stats() { return {}; }

#endif

}  // namespace detrain::dist
