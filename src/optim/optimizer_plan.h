// How a run's optimizer and schedule are set up from the config and the training set's size:
// the schedule settings, what the optimizer is told about the run, and optim.optimizer=auto
// resolved the reference's way (which also overrides momentum and warmup_bias_lr).
#pragma once

#include <cstdint>

#include "config/config.h"
#include "optim/optimizer_factory.h"
#include "optim/schedule.h"

namespace detrain::optim {

struct OptimizerPlan {
  ScheduleSettings settings;
  OptimizerRun run;
  OptimizerChoice choice;
};

// `train_images`: the records of the training split (the auto rule counts iterations as
// ceil(images / max(batch, nbs)) * epochs); `nc`: the model's classes.
OptimizerPlan plan_optimizer(const config::Experiment& x, int64_t train_images, int64_t nc);

}  // namespace detrain::optim
