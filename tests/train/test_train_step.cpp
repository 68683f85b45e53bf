// TrainStep on its own, on parts built the trainer's way from a tiny generated data set (CPU,
// fp32, one process): its loss items are the criterion's on the same batch, it accumulates
// until the schedule's boundary and then steps the optimizer and the EMA exactly once, and a
// non-finite loss is reported without touching weights, gradients or the step count.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "config/config.h"
#include "dist/world.h"
#include "model/state_dict.h"
#include "tasks/validation_run.h"
#include "train/train_fixtures.h"
#include "train/train_parts.h"
#include "train/train_step.h"

using namespace detrain;
using namespace detrain::train;
using namespace detrain::ckpt;
using namespace detrain::dist;
using namespace detrain::model;
using namespace detrain::tasks;
using detrain::test::TempDir;

namespace {

struct Fixture {
  TempDir dir;
  config::ResolvedConfig resolved;
  TrainingData data;
  std::unique_ptr<World> world;
  TrainParts parts;

  Fixture() {
    const auto synth = test::tiny_synth(dir);
    auto overrides = test::tiny_overrides(dir, synth.detect_yaml, "step");
    resolved = config::resolve("", overrides);
    const config::Experiment& x = resolved.experiment;
    data = build_training_data(x);
    world = make_world(place_process(x), x);
    parts = build_parts(x, data, *world, torch::kCPU, /*bf16=*/false);
    parts.train_loader->start_epoch(0);
  }
  StepOptions options() const {
    StepOptions o;
    o.precision = Precision::kFp32;
    o.clip_grad_norm = resolved.experiment.train.clip_grad_norm;
    return o;
  }
};

bool all_equal(const NamedTensors& a, const NamedTensors& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (!torch::equal(a[i].second, b[i].second)) return false;
  return a.size() == b.size();
}

NamedTensors cloned_state(const torch::nn::Module& m) {
  NamedTensors out;
  for (const auto& [name, t] : model::state_dict(m)) out.emplace_back(name, t.clone());
  return out;
}

}  // namespace

TEST_CASE("TrainStep returns the criterion's items, accumulates, then steps optimizer and EMA once",
          "[unit][train][train-step]") {
  Fixture f;
  const data::Batch batch = *f.parts.train_loader->next();
  SchedulePosition position;
  position.batches_per_epoch = f.parts.train_loader->batches_per_epoch();
  const NamedTensors before = cloned_state(*f.parts.model);

  // The criterion on the same batch and weights, computed here (BatchNorm statistics of this
  // forward are put back, so the step sees the same model).
  torch::Tensor expected;
  {
    const torch::Tensor images = batch.images.to(torch::kFloat).div(255.0);
    const model::TrainOutput out = f.parts.model->forward_train(images);
    expected = (*f.parts.criterion)(out, loss_targets(batch, torch::kCPU),
                                    {images.size(2), images.size(3)})
                   .items.detach();
    f.parts.model->zero_grad();
    std::map<std::string, torch::Tensor> restore(before.begin(), before.end());
    model::load_state_dict(*f.parts.model, restore, "the test");
  }

  TrainStep step(f.parts, *f.world, f.options());
  optim::IterationHyper hyper = f.parts.schedule->at(0, 0);
  hyper.accumulate = 2;       // iteration 0 after last_step_ni -1: due only when accumulate <= 1
  position.last_step_ni = 0;  // as if iteration 0 had just stepped: iteration 1 is not due
  const StepResult first = step.run(batch, 0, 1, hyper, 1.0, position);
  REQUIRE_FALSE(first.problem);
  // Same CPU ops in the same order: equal to the last bit.
  CHECK(torch::equal(first.loss_items, expected));
  CHECK_FALSE(first.optimizer_stepped);
  CHECK(position.optimizer_steps == 0);
  CHECK(f.parts.ema->updates() == 0);
  CHECK(first.images == batch.size());
  CHECK(first.instances == batch.cls.size(0));
  int64_t with_grad = 0;
  for (const auto& p : f.parts.trainable) with_grad += p.grad().defined() ? 1 : 0;
  CHECK(with_grad > 0);  // accumulating
  const NamedTensors after_first = cloned_state(*f.parts.model);

  const data::Batch second_batch = *f.parts.train_loader->next();
  const StepResult second = step.run(second_batch, 0, 2, hyper, 1.0, position);
  REQUIRE_FALSE(second.problem);
  CHECK(second.optimizer_stepped);  // 2 - 0 >= accumulate 2
  CHECK(position.optimizer_steps == 1);
  CHECK(position.last_step_ni == 2);
  CHECK(f.parts.ema->updates() == 1);
  CHECK_FALSE(all_equal(cloned_state(*f.parts.model), after_first));
  for (const auto& p : f.parts.trainable)
    if (p.grad().defined()) CHECK(p.grad().abs().max().item<double>() == 0.0);  // zeroed
  // The learning rates are the schedule's times the divergence scale.
  CHECK(f.parts.optimizer->lr(0) == hyper.lr[0]);
}

TEST_CASE("TrainStep reports a non-finite loss and leaves weights, gradients and steps alone",
          "[unit][train][train-step]") {
  Fixture f;
  const data::Batch batch = *f.parts.train_loader->next();
  SchedulePosition position;
  position.batches_per_epoch = f.parts.train_loader->batches_per_epoch();
  {
    torch::NoGradGuard no_grad;
    f.parts.params.front().param.fill_(std::nan(""));
  }
  const NamedTensors before = cloned_state(*f.parts.model);
  TrainStep step(f.parts, *f.world, f.options());
  const optim::IterationHyper hyper = f.parts.schedule->at(0, 0);
  const StepResult r = step.run(batch, 0, 0, hyper, 0.5, position);
  REQUIRE(r.problem);
  CHECK(r.problem->find("at epoch 1 iteration 0") != std::string::npos);
  CHECK_FALSE(r.optimizer_stepped);
  CHECK(position.optimizer_steps == 0);
  CHECK(position.last_step_ni == -1);
  for (const auto& p : f.parts.trainable) CHECK_FALSE(p.grad().defined());  // no backward
  // Parameters untouched (BatchNorm running statistics did see the forward).
  const NamedTensors after = cloned_state(*f.parts.model);
  for (size_t i = 1; i < before.size(); ++i)
    if (before[i].first.find("running_") == std::string::npos &&
        before[i].first.find("num_batches") == std::string::npos)
      CHECK(torch::equal(before[i].second, after[i].second));
  CHECK(f.parts.optimizer->lr(0) == hyper.lr[0] * 0.5);
}
