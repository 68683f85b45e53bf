// Validation losses of ValidationRun: the criterion's items on each val batch (eval-mode raw
// head outputs, the batch's targets) averaged over batches, checked against direct criterion
// calls on the same batches; the pose head's RLE item is 0 there, as in the reference.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "config/config.h"
#include "data/coco_records.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "data/synth.h"
#include "loss/criterion.h"
#include "model/yolo_model.h"
#include "tasks/validation_run.h"
#include "test_support.h"
#include "train/train_fixtures.h"

using namespace detrain;
using detrain::test::TempDir;
using detrain::test::tiny_synth;

namespace {

// The items averaged over the val batches, each computed by a direct criterion call on the
// eval-mode forward of the same loader batch.
std::vector<double> direct_val_losses(const config::Experiment& x, const data::DatasetInfo& dataset,
                                      model::YoloModelImpl& model,
                                      const loss::Criterion& criterion) {
  const auto records =
      data::load_records(dataset, "val", data::RecordOptions::from(x.data, false)).images;
  data::LoaderOptions lo =
      data::LoaderOptions::from(x.data, static_cast<uint64_t>(x.runtime.seed), /*train=*/false);
  lo.batch = x.val.batch;
  lo.stride = static_cast<int>(model.max_stride());
  data::Loader loader(dataset, records, x.augment, lo);
  loader.start_epoch(0, 0);
  torch::NoGradGuard no_grad;
  model.eval();
  torch::Tensor sum;  // [n] float64
  int64_t batches = 0;
  while (std::optional<data::Batch> b = loader.next()) {
    const torch::Tensor images = b->images.to(torch::kFloat).div(255.0);  // [B, 3, H, W]
    const model::EvalOutput out = model.forward_eval(images);
    const loss::LossResult l =
        criterion(out.raw, tasks::loss_targets(*b, torch::kCPU), {images.size(2), images.size(3)});
    const torch::Tensor items = l.items.to(torch::kDouble);
    sum = sum.defined() ? sum + items : items;
    ++batches;
  }
  REQUIRE(batches == 2);
  std::vector<double> means;
  for (int64_t i = 0; i < sum.size(0); ++i) means.push_back(sum[i].item<double>() / batches);
  return means;
}

struct Setup {
  config::ResolvedConfig resolved;
  data::DatasetInfo dataset;
  model::YoloModel model{nullptr};
  std::unique_ptr<loss::Criterion> criterion;
};

Setup make_setup(const std::string& dataset_yaml, const std::string& arch) {
  Setup s{config::resolve("", {"data.dataset=" + dataset_yaml, "data.imgsz=64", "data.workers=0",
                               "val.batch=4", "model.arch=" + arch, "runtime.seed=2"}),
          {},
          nullptr,
          nullptr};
  const config::Experiment& x = s.resolved.experiment;
  s.dataset = data::load_dataset(x.data.dataset, x.data.root);
  std::optional<std::array<int64_t, 2>> kpt_shape;
  if (s.dataset.has_keypoints())
    kpt_shape = std::array<int64_t, 2>{s.dataset.kpt_count, s.dataset.kpt_dims};
  torch::manual_seed(2);
  s.model = model::make_model(x.model, s.dataset.nc(), kpt_shape);
  s.criterion = loss::make_criterion(s.model->head()->options(), x.loss, s.dataset.oks_sigmas,
                                     s.model->head()->flow());
  return s;
}

void check_matches_direct(Setup& s) {
  const config::Experiment& x = s.resolved.experiment;
  tasks::ValidationRun run(x, s.dataset, "val", *s.model, torch::kCPU, /*bf16=*/false);
  const infer::ValidationResult r = run.run(*s.model, {}, s.criterion.get());
  const std::vector<double> direct = direct_val_losses(x, s.dataset, *s.model, *s.criterion);
  REQUIRE(r.losses.size() == s.criterion->names().size());
  for (size_t i = 0; i < r.losses.size(); ++i) {
    INFO(s.criterion->names()[i] << ": validation " << r.losses[i] << ", direct " << direct[i]);
    CHECK(std::isfinite(r.losses[i]));
    // The same operations on the same batches in one process (fp32): bit-identical.
    CHECK(r.losses[i] == direct[i]);
  }
  // Without a criterion nothing is computed.
  CHECK(run.run(*s.model).losses.empty());
}

}  // namespace

TEST_CASE("validation losses are the batch mean of direct criterion calls (detect)",
          "[unit][train]") {
  TempDir dir;
  const auto synth = tiny_synth(dir, 5, 4, 8);
  Setup s = make_setup(synth.detect_yaml, "models/yolo26.yaml");
  check_matches_direct(s);
}

TEST_CASE("validation losses of a pose model match direct calls and have RLE 0", "[unit][train]") {
  TempDir dir;
  const auto synth = tiny_synth(dir, 5, 4, 8);
  Setup s = make_setup(synth.pose_yaml, "models/yolo26-pose.yaml");
  check_matches_direct(s);
  tasks::ValidationRun run(s.resolved.experiment, s.dataset, "val", *s.model, torch::kCPU, false);
  const infer::ValidationResult r = run.run(*s.model, {}, s.criterion.get());
  const auto& names = s.criterion->names();
  const auto rle = std::find(names.begin(), names.end(), "rle");
  REQUIRE(rle != names.end());
  // The eval graph skips the sigma heads, so the RLE term has nothing to score (reference
  // section 3.4: "val rle is 0").
  CHECK(r.losses[static_cast<size_t>(rle - names.begin())] == 0.0);
  CHECK(r.losses[0] > 0.0);  // box
}
