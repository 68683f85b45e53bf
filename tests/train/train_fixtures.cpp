// Fixtures shared by the training tests; see train_fixtures.h.
#include "train/train_fixtures.h"

#include <torch/torch.h>

#include <algorithm>
#include <catch2/catch.hpp>

namespace detrain::test {

data::SynthSummary tiny_synth(const TempDir& dir, uint64_t seed, int64_t train_images,
                              int64_t val_images) {
  data::SynthOptions o;
  o.seed = seed;
  o.train_images = train_images;
  o.val_images = val_images;
  o.min_side = 96;
  o.max_side = 128;
  o.max_objects = 3;
  return data::write_synth_dataset(dir.file("synth"), o);
}

std::vector<std::string> tiny_overrides(const TempDir& dir, const std::string& dataset,
                                        const std::string& name) {
  return {"data.dataset=" + dataset,
          "data.imgsz=64",
          "data.batch=4",
          "data.workers=2",
          "train.epochs=2",
          "train.warmup_epochs=0",
          "train.nbs=8",  // accumulate 2: an interruption can fall between two micro-batches
          "train.precision=fp32",
          "train.progress=off",
          "train.log_every=1",
          "train.plots=false",
          "train.project=" + dir.file("runs"),
          "train.name=" + name,
          "optim.optimizer=musgd",
          "runtime.threads=1",  // ctest runs two tests at once on two cores
          "runtime.seed=3",
          "runtime.memory_format=nchw"};  // not auto: the same run on every CI machine
}

TensorListDifference max_difference(const ckpt::NamedTensors& a, const ckpt::NamedTensors& b,
                                    bool relative) {
  REQUIRE(a.size() == b.size());
  TensorListDifference out;
  for (size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].first == b[i].first);
    if (!a[i].second.is_floating_point()) {
      CHECK(torch::equal(a[i].second, b[i].second));
      continue;
    }
    const double scale = relative ? std::max(1.0, a[i].second.abs().max().item<double>()) : 1.0;
    const double d = (a[i].second - b[i].second).abs().max().item<double>() / scale;
    if (d > out.value) {
      out.value = d;
      out.worst_name = a[i].first;
    }
  }
  return out;
}

std::string tiny_dist_args(const TempDir& dir, const std::string& dataset,
                           const std::string& name) {
  return "data.dataset=" + dataset +
         " data.imgsz=64 data.batch=4 data.workers=1 train.epochs=2 train.warmup_epochs=0"
         " train.nbs=8 train.precision=fp32 train.progress=off train.log_every=1"
         " train.plots=false train.sync_bn=true optim.optimizer=musgd runtime.threads=1"
         " runtime.seed=3 runtime.memory_format=nchw train.project=" +
         dir.file("runs") + " train.name=" + name;
}

}  // namespace detrain::test
