// model.weights for a new run (fine-tuning, "train longer"): a detrain checkpoint (its EMA
// weights, as validated, else the raw model), a run directory (its weights/best.ckpt, else
// weights/last.ckpt) or a safetensors state dict with reference names. A checkpoint of another
// architecture, scale or keypoint shape, or a safetensors file whose names or shapes are not
// this model's, is refused naming both; weights for another class count (a checkpoint's nc, or
// safetensors whose only differences are in the head's class branch) load every tensor of the
// same name and shape, as the reference's intersect_dicts does, leave the class heads at their
// initialisation and say so in one warning line ("transferred 606/708 tensors, skipped 102
// class-head tensors"). An Ultralytics .pt transfers as 8.4.190's DetectionModel.load does:
// every tensor of the same name and shape, and for another class set the class convs' rows
// remapped by class name (case and surrounding spaces ignored) where the names match.
#pragma once

#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "config/config.h"
#include "model/yolo_model.h"

namespace detrain::ckpt {

struct InitialWeightsReport {
  std::string path;     // the file loaded
  size_t loaded = 0;    // tensors copied
  size_t fresh = 0;     // tensors left at their initialisation (class heads)
  size_t remapped = 0;  // class-conv tensors whose rows were copied by class name (.pt)
  bool from_checkpoint = false;
};

// The weights file `weights` names: itself, or for a run directory its best.ckpt (else
// last.ckpt). Throws IoError naming what was looked for.
std::string initial_weights_file(const std::string& weights);

// Loads `weights` into `model`, which is `identity`; `names` are the run's class names (for a
// .pt's remap by name). Throws IoError / ModelError.
InitialWeightsReport load_initial_weights(model::YoloModelImpl& model, const ArchIdentity& identity,
                                          const std::string& weights,
                                          const std::vector<std::string>& names = {});

// A run whose model.weights is an Ultralytics .pt trains the file's architecture: model.arch and
// model.scale become the file's (unless model.arch was given, which must then build the file's
// network) and model.cls_width its class-tower width, so that another class count keeps the
// file's hidden class layers as the reference does. Recorded as overrides (args.yaml shows
// them, --resume rebuilds the same network). No-op for other weights.
void adopt_pt_architecture(config::ResolvedConfig& resolved);

// Throws ModelError (exit 6, a checkpoint problem) when `checkpoint` holds weights only (a
// best.ckpt), which cannot resume.
void require_resumable(const Checkpoint& checkpoint, const std::string& path);

}  // namespace detrain::ckpt
