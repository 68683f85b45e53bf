// The checkpoint files of a run directory beyond writing one: publishing weights/best.ckpt
// and tidying up before a resume. best.ckpt is a hard link of the finished last.ckpt renamed
// into place (link_file_atomic), so a kill or a full disk can never leave it torn.
#pragma once

#include "train/checkpoint.h"
#include "train/run_dir.h"

namespace detrain::train {

// Makes paths.best_ckpt the checkpoint just written to paths.last_ckpt. Throws IoError.
void publish_best(const RunPaths& paths);

// Before a resumed run continues from `last` (just loaded and verified from paths.last_ckpt):
// removes temporaries that killed writes left in the run and weights directories, and checks
// best.ckpt. A damaged or missing best.ckpt is rewritten from last.ckpt: exactly when `last`
// is the best epoch's state, otherwise with a warning that it now holds the last epoch's
// weights. Logs each thing it did.
void tidy_for_resume(const RunPaths& paths, const Checkpoint& last);

}  // namespace detrain::train
