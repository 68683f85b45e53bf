// Divergence handling. A step is bad when its loss or gradients are non-finite, or when its
// loss is exactly zero on a batch with targets (a collapsed network: every prediction saturated,
// so no loss term is left to learn from); a validation is bad when its losses or fitness are
// non-finite. On a bad step the trainer rolls back to its last good in-memory state (taken at
// the start of each epoch) and halves the learning rate, at most train.max_bad_steps times; the
// next one stops the run with NumericError (exit 7). In-memory, because the newest checkpoint on
// disk may already hold the damage.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "ckpt/checkpoint.h"
#include "infer/validate.h"

namespace detrain::train {

// How an epoch's training came out: every iteration ran, a stop request ended it early (a
// resumable checkpoint follows), or it diverged, a step or its validation (`problem` says how;
// the trainer rolls back).
struct EpochOutcome {
  enum class Kind { kCompleted, kStopped, kDiverged };
  Kind kind = Kind::kCompleted;
  std::string problem;  // kDiverged only

  static EpochOutcome completed() { return {Kind::kCompleted, {}}; }
  static EpochOutcome stopped() { return {Kind::kStopped, {}}; }
  static EpochOutcome diverged(std::string problem) {
    return {Kind::kDiverged, std::move(problem)};
  }
  bool is(Kind k) const { return kind == k; }
};

// "non-finite loss" / "zero loss on a batch with 12 targets", or nullopt for a good step.
std::optional<std::string> loss_problem(double total_loss, int64_t targets);

// False when a validation's losses or fitness are NaN or infinite.
bool validation_finite(const infer::ValidationResult& result);

// Counts rollbacks and keeps the learning-rate factor they leave behind.
class DivergencePolicy {
 public:
  // `rollbacks` and `lr_scale` continue a resumed run's.
  explicit DivergencePolicy(int64_t max_rollbacks, int64_t rollbacks = 0, double lr_scale = 1.0)
      : max_rollbacks_(max_rollbacks), rollbacks_(rollbacks), lr_scale_(lr_scale) {}

  // A bad step or validation: true when the run may roll back (counted, learning rate halved),
  // false when the rollbacks are used up and the run must stop.
  bool try_rollback();
  int64_t rollbacks() const { return rollbacks_; }
  int64_t max_rollbacks() const { return max_rollbacks_; }
  double lr_scale() const { return lr_scale_; }

 private:
  int64_t max_rollbacks_;
  int64_t rollbacks_;
  double lr_scale_;
};

// What the stop message advises, from the run's settings.
struct DivergenceContext {
  bool bf16 = false;            // advise fp32 only to a bf16 run
  bool clipping = true;         // advise train.clip_grad_norm only when it is off
  std::string checkpoint;       // an existing checkpoint to go back to; empty when none exists
  std::string save_period_key;  // "train.save_period_steps" (named when no checkpoint exists)

  // A training run's context: `last_checkpoint` counts only when the file exists.
  static DivergenceContext of_run(bool bf16, bool clipping, const std::string& last_checkpoint);
};

// The one-line exit-7 message: what went wrong, how often it was rolled back, what to do.
std::string diverged_message(const std::string& problem, const DivergencePolicy& policy,
                             const DivergenceContext& context);

// The log line of one rollback.
std::string rollback_message(const std::string& problem, const DivergencePolicy& policy,
                             int64_t epoch, int64_t iter);

// A copy of `checkpoint` sharing no tensor storage with it (make_checkpoint aliases live
// weights, which the following steps overwrite).
ckpt::Checkpoint deep_copy(const ckpt::Checkpoint& checkpoint);

}  // namespace detrain::train
