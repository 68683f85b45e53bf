// Divergence handling; see divergence.h.
#include "train/divergence.h"

#include <spdlog/fmt/fmt.h>

#include <cmath>
#include <filesystem>

namespace detrain::train {

std::optional<std::string> loss_problem(double total_loss, int64_t targets) {
  if (!std::isfinite(total_loss)) return std::string("non-finite loss");
  if (total_loss == 0.0 && targets > 0)
    return fmt::format("loss exactly 0 on a batch with {} targets", targets);
  return std::nullopt;
}

bool validation_finite(const infer::ValidationResult& result) {
  for (double loss : result.losses)
    if (!std::isfinite(loss)) return false;
  return !std::isnan(result.fitness());
}

bool DivergencePolicy::try_rollback() {
  if (rollbacks_ >= max_rollbacks_) return false;
  ++rollbacks_;
  lr_scale_ *= 0.5;
  return true;
}

std::string diverged_message(const std::string& problem, const DivergencePolicy& policy,
                             const DivergenceContext& context) {
  std::string advice = "lower optim.lr0";
  if (!context.clipping) advice += ", set train.clip_grad_norm (e.g. 10)";
  if (context.bf16) advice += ", or use train.precision=fp32";
  const std::string where = context.checkpoint.empty()
                                ? "no checkpoint was written yet (" + context.save_period_key +
                                      "=0 and no epoch finished)"
                                : "the last good checkpoint is " + context.checkpoint;
  return fmt::format(
      "training diverged: {} after {} rollback(s) with the learning rate halved each time "
      "(train.max_bad_steps = {}); {}; {}",
      problem, policy.rollbacks(), policy.max_rollbacks(), where, advice);
}

std::string rollback_message(const std::string& problem, const DivergencePolicy& policy,
                             int64_t epoch, int64_t iter) {
  return fmt::format(
      "divergence: {}; rolled back to epoch {} iteration {}, learning rate x{} (rollback {} of "
      "train.max_bad_steps = {})",
      problem, epoch + 1, iter, policy.lr_scale(), policy.rollbacks(), policy.max_rollbacks());
}

namespace {
ckpt::NamedTensors clone_all(const ckpt::NamedTensors& tensors) {
  ckpt::NamedTensors out;
  out.reserve(tensors.size());
  for (const auto& [name, t] : tensors)
    out.emplace_back(name, t.defined() ? t.detach().clone() : t);
  return out;
}
}  // namespace

ckpt::Checkpoint deep_copy(const ckpt::Checkpoint& checkpoint) {
  ckpt::Checkpoint c = checkpoint;
  c.model = clone_all(checkpoint.model);
  c.ema = clone_all(checkpoint.ema);
  c.optimizer.tensors = clone_all(checkpoint.optimizer.tensors);
  c.extra_tensors = clone_all(checkpoint.extra_tensors);
  for (auto& [name, t] : c.generator_states) t = t.clone();
  return c;
}

DivergenceContext DivergenceContext::of_run(bool bf16, bool clipping,
                                            const std::string& last_checkpoint) {
  DivergenceContext c;
  c.bf16 = bf16;
  c.clipping = clipping;
  c.save_period_key = "train.save_period_steps";
  std::error_code ec;
  if (std::filesystem::exists(last_checkpoint, ec)) c.checkpoint = last_checkpoint;
  return c;
}

}  // namespace detrain::train
