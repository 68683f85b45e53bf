// Fixtures shared by the training tests: the small synthetic data sets their runs train on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "data/synth.h"
#include "test_support.h"

namespace detrain::test {

// `detrain train` overrides for the distributed tests on tiny_synth's 16 train images (2 ranks x
// 2 divide them evenly, so 2 ranks see exactly one process's batches): 64 px, global batch 4,
// nbs 8 (every optimizer step averages two micro-batches), 2 epochs, fp32, sync BN, MuSGD, one
// thread, NCHW, run `name` under dir/runs. Later overrides win, so a test appends what it changes.
std::string tiny_dist_args(const TempDir& dir, const std::string& dataset, const std::string& name);

// `train_images` / `val_images` shapes images of 96-128 px with up to 3 objects each, written
// under dir/synth (deterministic for a seed).
data::SynthSummary tiny_synth(const TempDir& dir, uint64_t seed = 11, int64_t train_images = 16,
                              int64_t val_images = 8);

// Overrides for a short CPU run on `dataset` (tiny_synth): 64 px, batch 4 with accumulation 2,
// 2 epochs, fp32, one thread, seed 3, NCHW (runtime.memory_format: auto would depend on the
// CI machine's CPU), run directory <dir>/runs/<name>, no progress or plots.
std::vector<std::string> tiny_overrides(const TempDir& dir, const std::string& dataset,
                                        const std::string& name);

struct TensorListDifference {
  double value = 0;        // largest difference over the lists
  std::string worst_name;  // the tensor it came from (empty when every tensor is equal)
};

// Largest |a - b| over two named tensor lists that must hold the same names in order (integer
// tensors must be equal). `relative`: each tensor's difference over max(1, max |a|), for lists
// that mix scales (BN running variances reach the hundreds).
TensorListDifference max_difference(const ckpt::NamedTensors& a, const ckpt::NamedTensors& b,
                                    bool relative = false);

}  // namespace detrain::test
