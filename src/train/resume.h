// `detrain train --resume`: the checkpoint to continue from, refused with one line naming the
// file and the fix when it cannot continue this run (not resumable, another architecture,
// already finished, another configuration without --force, another number of batches per
// epoch). Another world size continues the same global batches, with a warning saying so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "config/config.h"
#include "train/train_parts.h"
#include "train/train_state.h"

namespace detrain::train {

struct ResumeExpectation {
  ckpt::ArchIdentity arch;        // the model this run builds
  int64_t world_size = 1;         // ranks of this run
  int64_t batches_per_epoch = 0;  // this data set and batch
  const config::ResolvedConfig* resolved = nullptr;
  bool force = false;  // accept a different configuration (the diff is logged)
};

// `detrain train --resume WHERE` without --config: the configuration to resume with, the run's
// args.yaml when WHERE (a run directory or its weights/last.ckpt) sits in a run that has one,
// else the checkpoint's own, with `overrides` on top. The checkpoint is read and checked first,
// so a bad file is named as what it is rather than as a missing args.yaml: IoError when WHERE
// or the checkpoint does not exist (exit 5), ModelError when it is not a detrain checkpoint, is
// truncated or corrupt, or is best.ckpt's shipped weights (exit 6, as every checkpoint error).
config::ResolvedConfig resume_config(const std::string& where,
                                     const std::vector<std::string>& overrides);

// Loads `path` and checks it against `expected`: ModelError for a checkpoint that cannot
// continue any run (best.ckpt, another architecture), ConfigError for one that cannot continue
// this configuration (finished, config, batches per epoch).
ckpt::Checkpoint load_resume_checkpoint(const std::string& path, const ResumeExpectation& expected);

// `--resume WHERE` (a run directory or a checkpoint): the checked checkpoint's weights,
// optimizer, generators and gradients into `parts` and its loop state into `state`; returns
// the checkpoint (best.ckpt is repaired from it).
ckpt::Checkpoint resume_into(TrainParts& parts, TrainState& state, const std::string& where,
                             const ResumeExpectation& expected);

}  // namespace detrain::train
