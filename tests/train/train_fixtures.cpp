// Fixtures shared by the training tests; see train_fixtures.h.
#include "train/train_fixtures.h"

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

}  // namespace detrain::test
