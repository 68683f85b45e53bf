// Fixtures shared by the training tests: the small synthetic data sets their runs train on.
#pragma once

#include <cstdint>

#include "data/synth.h"
#include "test_support.h"

namespace detrain::test {

// `train_images` / `val_images` shapes images of 96-128 px with up to 3 objects each, written
// under dir/synth (deterministic for a seed).
data::SynthSummary tiny_synth(const TempDir& dir, uint64_t seed = 11, int64_t train_images = 16,
                              int64_t val_images = 8);

}  // namespace detrain::test
