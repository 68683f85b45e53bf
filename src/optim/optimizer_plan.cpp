// See optimizer_plan.h.
#include "optim/optimizer_plan.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace detrain::optim {

OptimizerPlan plan_optimizer(const config::Experiment& x, int64_t train_images, int64_t nc) {
  OptimizerPlan plan;
  plan.settings = schedule_settings(x);
  plan.run.batch = x.data.batch;
  plan.run.accumulate = steady_accumulate(plan.settings);
  plan.run.nbs = x.train.nbs;
  plan.run.nc = nc;
  const int64_t per_iteration = std::max(x.data.batch, x.train.nbs);
  plan.run.total_iterations = (train_images + per_iteration - 1) / per_iteration * x.train.epochs;
  plan.choice = choose_optimizer(x.optim, plan.run.total_iterations, plan.run.nc);
  if (plan.choice.automatic) {
    plan.settings.momentum = plan.choice.momentum;
    plan.settings.warmup_bias_lr = 0.0;
    spdlog::info("optimizer auto: {} (lr0 {}, momentum {})", plan.choice.kind, plan.choice.lr0,
                 plan.choice.momentum);
  }
  return plan;
}

}  // namespace detrain::optim
