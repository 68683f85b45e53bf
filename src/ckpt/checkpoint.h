// Training checkpoints: one file holding everything a run needs to continue exactly where it
// stopped (model and EMA by name, optimizer state by name, schedule position, every RNG stream,
// loader position, resolved config and its hash, metrics so far), written atomically. Unlike
// the reference's pickled last.pt (fp16 EMA, no raw model), weights stay fp32 and nothing is
// keyed by pointers or module objects, so a file loads into any build of the same architecture.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/rng.h"
#include "optim/optimizer.h"

namespace detrain::ckpt {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// Which network a checkpoint belongs to; loading into a different one is a ModelError.
struct ArchIdentity {
  std::string arch_file;           // as configured, e.g. "models/yolo26.yaml" (for messages)
  std::string arch_hash;           // content_hash() of the architecture YAML text
  std::string scale;               // "n", "s", ...
  int64_t nc = 0;                  // classes
  std::vector<int64_t> kpt_shape;  // {} for detection, {K, 3} for pose

  // "models/yolo26.yaml (scale n, 80 classes, keypoints [17, 3], arch 0123abcd...)"
  std::string describe() const;
  bool operator==(const ArchIdentity& o) const {
    return arch_hash == o.arch_hash && scale == o.scale && nc == o.nc && kpt_shape == o.kpt_shape;
  }
};

// 16 hex digits identifying a text (architecture YAML content, for ArchIdentity::arch_hash).
std::string content_hash(std::string_view text);

// Where training stands. The global iteration is epoch * batches_per_epoch + iter_in_epoch.
struct SchedulePosition {
  int64_t epoch = 0;          // epoch in progress (0-based)
  int64_t iter_in_epoch = 0;  // next iteration to run in `epoch` (batches_per_epoch: done)
  int64_t batches_per_epoch = 0;
  int64_t optimizer_steps = 0;  // optimizer steps taken so far
  int64_t last_step_ni = -1;    // global iteration of the last optimizer step (accumulation)
  int64_t ema_updates = 0;      // ModelEma::updates()
  int64_t bad_steps = 0;        // skipped non-finite steps so far
  bool finished = false;        // the run completed every epoch
};

struct Checkpoint {
  ArchIdentity arch;
  NamedTensors model;                  // fp32 state dict by name (model::state_dict order)
  NamedTensors ema;                    // EMA state dict by name; empty when there is none
  optim::OptimizerSnapshot optimizer;  // stored as its kind, tensors and scalars
  SchedulePosition position;
  std::map<std::string, Rng::State> rng_streams;          // detrain::Rng streams by role
  std::map<std::string, torch::Tensor> generator_states;  // torch generators (see below)
  std::map<std::string, int64_t> loader_position;         // the loader's resume words
  std::string config_yaml;                                // resolved config (args.yaml text)
  std::string config_hash;                                // ResolvedConfig::hash
  std::string metrics_json;  // the trainer's history (per-epoch rows), opaque here
  double best_fitness = -std::numeric_limits<double>::infinity();
  int64_t best_epoch = -1;
  // Anything else the loop needs bit-exactly mid-epoch (accumulated gradients, running loss
  // sums), opaque here.
  NamedTensors extra_tensors;
  std::map<std::string, double> extra_scalars;
  // Filled on save.
  std::string detrain_version;
  std::string created_utc;
};

// Writes `checkpoint` to `path` atomically (temp file, fsync, rename): a crash or a failed
// write leaves the previous file intact. Tensors are written from CPU copies. Throws IoError.
void save_checkpoint(const std::string& path, const Checkpoint& checkpoint);

// Reads and validates a checkpoint; tensors come back on the CPU. One-line errors: IoError
// when the file is missing or unreadable; ModelError when it is not a detrain checkpoint, is
// truncated or corrupt (checksum over names and tensor bytes), or has an unknown format version.
Checkpoint load_checkpoint(const std::string& path);

// Throws ModelError when `checkpoint` was written for another architecture than `expected`,
// naming both and `path`.
void check_architecture(const Checkpoint& checkpoint, const ArchIdentity& expected,
                        const std::string& path);

// The state of LibTorch's default generators ("torch_cpu", and "torch_cuda:N" per visible
// device) for Checkpoint::generator_states, and their restoration (missing names are ignored).
std::map<std::string, torch::Tensor> capture_torch_generators();
void restore_torch_generators(const std::map<std::string, torch::Tensor>& states);

}  // namespace detrain::ckpt
