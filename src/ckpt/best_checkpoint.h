// best.ckpt is what a user ships: the EMA weights (fp16 unless train.best_half=false), the
// architecture identity, the resolved config and the metrics, and nothing a resume needs
// (raw model, optimizer state, RNG streams, gradients), so it is a few MB where last.ckpt,
// which stays fully resumable, is several times larger. `detrain val`/`predict` and
// model.weights read both; `--resume` uses last.ckpt and refuses a best.ckpt.
#pragma once

#include "ckpt/checkpoint.h"

namespace detrain::ckpt {

// The weights-only form of a full training checkpoint.
Checkpoint shippable_checkpoint(const Checkpoint& full, bool half);

}  // namespace detrain::ckpt
