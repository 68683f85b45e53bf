// The checkpoint files of a run directory beyond writing one: publishing weights/best.ckpt
// and tidying up before a resume. best.ckpt is the shippable form of a checkpoint
// (best_checkpoint.h) written as every checkpoint is (temporary file, fsync, rename), so a
// kill or a full disk can never leave it torn.
#pragma once

#include "ckpt/checkpoint.h"
#include "report/run_dir.h"

namespace detrain::ckpt {

// Writes paths.best_ckpt: the shippable form of `full` (EMA weights, fp16 when `half`).
// Throws IoError and keeps the previous best.ckpt.
void publish_best(const report::RunPaths& paths, const Checkpoint& full, bool half);

// Before a resumed run continues from `last` (just loaded and verified from paths.last_ckpt):
// removes temporaries that killed writes left in the run and weights directories, and checks
// best.ckpt. A damaged or missing best.ckpt is rewritten from `last` (publish_best): exactly
// when `last` is the best epoch's state, otherwise with a warning that it now holds the last
// epoch's weights. Logs each thing it did.
void tidy_for_resume(const report::RunPaths& paths, const Checkpoint& last, bool half);

}  // namespace detrain::ckpt
