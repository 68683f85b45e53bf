// A channels-last (runtime.memory_format=nhwc) run's checkpoint on disk: every tensor NCHW-
// contiguous, byte for byte what an NCHW run with the same state writes, and it loads into
// either format (the parts keep their own layout, the values are the file's). The safetensors
// export of an nhwc model is byte-identical to the NCHW model's.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "ckpt/checkpoint.h"
#include "common/atomic_file.h"
#include "config/config.h"
#include "dist/world.h"
#include "export/weights_export.h"
#include "model/channels_last.h"
#include "train/train_fixtures.h"
#include "train/train_parts.h"
#include "train/train_state.h"
#include "train/train_step.h"

using namespace detrain;
using namespace detrain::train;
using namespace detrain::ckpt;
using detrain::test::TempDir;

namespace {

// Training parts built the trainer's way on tiny_synth, in `layout`.
struct Parts {
  config::ResolvedConfig resolved;
  TrainingData data;
  std::unique_ptr<dist::World> world;
  TrainParts parts;

  Parts(const TempDir& dir, const std::string& dataset, const std::string& layout) {
    auto overrides = test::tiny_overrides(dir, dataset, "layout-" + layout);
    overrides.push_back("runtime.memory_format=" + layout);
    resolved = config::resolve("", overrides);
    const config::Experiment& x = resolved.experiment;
    data = build_training_data(x);
    world = dist::make_world(dist::place_process(x), x);
    const model::MemoryFormat format =
        model::choose_memory_format(x.runtime.memory_format, torch::kCPU).format;
    parts = build_parts(x, data, *world, torch::kCPU, /*bf16=*/false, format);
    parts.train_loader->start_epoch(0);
  }
};

bool same_bytes(const torch::Tensor& a, const torch::Tensor& b) {
  return a.scalar_type() == b.scalar_type() && a.sizes() == b.sizes() && a.is_contiguous() &&
         b.is_contiguous() && std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

// Every tensor of a loaded checkpoint's lists, named by list.
std::vector<std::pair<std::string, torch::Tensor>> tensors_of(const Checkpoint& c) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto* list : {&c.model, &c.ema, &c.optimizer.tensors, &c.extra_tensors})
    for (const auto& [name, t] : *list) out.emplace_back(name, t);
  return out;
}

int64_t channels_last_4d(const std::vector<torch::Tensor>& tensors) {
  int64_t n = 0;
  for (const auto& t : tensors)
    if (t.dim() == 4 && !t.is_contiguous() && t.is_contiguous(torch::MemoryFormat::ChannelsLast))
      ++n;
  return n;
}

}  // namespace

TEST_CASE("an nhwc run's checkpoint is NCHW on disk and loads into either format",
          "[unit][train][memory-format]") {
  TempDir dir;
  const auto synth = test::tiny_synth(dir);
  Parts nhwc(dir, synth.detect_yaml, "nhwc");
  REQUIRE(channels_last_4d(nhwc.parts.model->parameters()) > 20);
  REQUIRE(channels_last_4d(nhwc.parts.ema_model->parameters()) > 20);

  // One optimizer step, then a micro-batch that stays accumulated: momentum buffers and gradients
  // exist and are channels-last, as at a mid-accumulation stop.
  TrainState state;
  state.position.batches_per_epoch = nhwc.parts.train_loader->batches_per_epoch();
  StepOptions options;
  options.precision = model::Precision::kFp32;
  TrainStep step(nhwc.parts, *nhwc.world, options);
  optim::IterationHyper hyper = nhwc.parts.schedule->at(0, 0);
  hyper.accumulate = 1;
  REQUIRE_FALSE(
      step.run(*nhwc.parts.train_loader->next(), 0, 0, hyper, 1.0, state.position).problem);
  hyper.accumulate = 4;
  REQUIRE_FALSE(
      step.run(*nhwc.parts.train_loader->next(), 0, 1, hyper, 1.0, state.position).problem);
  std::vector<torch::Tensor> grads;
  for (const auto& p : nhwc.parts.trainable) grads.push_back(p.grad());
  CHECK(channels_last_4d(grads) > 20);

  const std::string nhwc_file = dir.file("nhwc.ckpt");
  save_checkpoint(nhwc_file, capture_checkpoint(state, nhwc.parts, nhwc.resolved));
  const Checkpoint written = load_checkpoint(nhwc_file);
  const auto live = capture_checkpoint(state, nhwc.parts, nhwc.resolved);
  const auto on_disk = tensors_of(written), in_memory = tensors_of(live);
  REQUIRE(on_disk.size() == in_memory.size());
  int64_t four_d = 0;
  for (size_t i = 0; i < on_disk.size(); ++i) {
    INFO(on_disk[i].first);
    REQUIRE(on_disk[i].first == in_memory[i].first);
    CHECK(on_disk[i].second.is_contiguous());  // NCHW order on disk
    CHECK(same_bytes(on_disk[i].second, in_memory[i].second.contiguous()));
    four_d += on_disk[i].second.dim() == 4 ? 1 : 0;
  }
  CHECK(four_d > 100);

  // Into an NCHW run: its parts stay NCHW, hold the file's values, and write the same bytes.
  Parts nchw(dir, synth.detect_yaml, "nchw");
  restore_parts(nchw.parts, written, nhwc_file);
  for (const auto& p : nchw.parts.model->parameters()) CHECK(p.is_contiguous());
  const std::string nchw_file = dir.file("nchw.ckpt");
  save_checkpoint(nchw_file, capture_checkpoint(state, nchw.parts, nchw.resolved));
  const auto rewritten = tensors_of(load_checkpoint(nchw_file));
  REQUIRE(rewritten.size() == on_disk.size());
  for (size_t i = 0; i < on_disk.size(); ++i) {
    INFO(on_disk[i].first);
    CHECK(rewritten[i].first == on_disk[i].first);
    CHECK(same_bytes(rewritten[i].second, on_disk[i].second));
  }

  // Into a fresh nhwc run: channels-last again, the same values.
  Parts again(dir, synth.detect_yaml, "nhwc");
  restore_parts(again.parts, written, nhwc_file);
  CHECK(channels_last_4d(again.parts.model->parameters()) > 20);
  CHECK(channels_last_4d(again.parts.ema_model->parameters()) > 20);
  std::vector<torch::Tensor> restored_grads;
  for (const auto& p : again.parts.trainable) restored_grads.push_back(p.grad());
  CHECK(channels_last_4d(restored_grads) > 20);
  const auto reloaded = tensors_of(capture_checkpoint(state, again.parts, again.resolved));
  REQUIRE(reloaded.size() == in_memory.size());
  for (size_t i = 0; i < reloaded.size(); ++i) {
    INFO(reloaded[i].first);
    CHECK(reloaded[i].second.strides() == in_memory[i].second.strides());
    CHECK(torch::equal(reloaded[i].second, in_memory[i].second));
  }

  // The shipped weights: safetensors of the nhwc model equal the NCHW model's byte for byte.
  exporter::export_safetensors(*nhwc.parts.model, dir.file("nhwc.safetensors"));
  exporter::export_safetensors(*nchw.parts.model, dir.file("nchw.safetensors"));
  CHECK(read_file(dir.file("nhwc.safetensors")) == read_file(dir.file("nchw.safetensors")));
}
