// Ultralytics `.pt` files (what `yolo train` writes as last.pt / best.pt, what Model.save and
// the release assets are) read without Python: the torch.save zip is opened with LibTorch's
// archive reader, data.pkl goes through weights/pickle.h (data only, nothing is run), and the
// pickled DetectionModel / PoseModel is walked for what detrain needs: its architecture (the
// model's `yaml` dict: yaml_file, scale, nc, kpt_shape), its class names and its state dict by
// the reference's names (which are detrain's). The EMA weights when the file has them (a
// last.pt), else `model` (a stripped best.pt, a release asset), as Ultralytics loads them.
#pragma once

#include <torch/torch.h>

#include <array>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace detrain::weights {

struct UltralyticsModelFile {
  std::string path;
  std::string model_class;  // "DetectionModel" or "PoseModel"
  std::string task;         // "detect" or "pose"
  std::string yaml_file;    // the architecture's file name as Ultralytics recorded it (a hint)
  std::string scale;        // "n" ... "x" ("" when the file does not say)
  // The embedded architecture (the model's `yaml` dict: rows, scales or depth_multiple /
  // width_multiple, kpt_shape, reg_max, end2end) as a detrain model YAML with nc set to `nc`.
  std::string arch_yaml;
  int64_t nc = 0;       // from the head's class conv, else the names, else the yaml dict
  int64_t yaml_nc = 0;  // what the yaml dict says (may disagree: a yaml never updated)
  std::optional<std::array<int64_t, 2>> kpt_shape;  // pose models
  std::vector<std::string> names;                   // [nc] class names, index order
  bool placeholder_names = false;  // names are "0", "1", ... (a model built from a YAML)
  std::string weights_of;          // "ema" or "model": which object the tensors come from
  std::string version;             // Ultralytics version that wrote it ("" if not recorded)
  std::string date;
  int64_t epoch = -1;  // -1: a finished or untrained model
  std::string dtype;   // "float16" or "float32": how the file stores them
  // Every parameter and persistent buffer, state_dict() order, as float32 (integers kept).
  std::vector<std::pair<std::string, torch::Tensor>> state;
  std::map<std::string, std::string> train_args;  // scalar training arguments, as text
};

// The globals an Ultralytics .pt's pickle may name (docs/weights.md says why each is safe): a
// stream naming any other is refused, naming it. Nothing named is ever called.
bool ultralytics_global_allowed(const std::string& module, const std::string& name);

// True for names detrain reads as Ultralytics files (.pt, .pth).
bool is_ultralytics_pt(const std::string& path);

// Throws IoError (missing or unreadable file) or ModelError naming the file and what is wrong:
// not a zip (truncated/corrupt), not a torch.save archive, a pickle that names a class of
// another program (e.g. a torchvision model), no `model` key (a bare state dict), a task
// detrain does not train (segment, OBB, classify, RT-DETR, world), malformed tensors.
UltralyticsModelFile read_ultralytics_pt(const std::string& path);

// The module tree of a pickled nn.Module as a state dict (exposed for tests).
std::map<std::string, torch::Tensor> state_map(const UltralyticsModelFile& file);

// The class count a reference-named state dict's head predicts: the first dimension of the last
// conv of its class tower (model.<head>.cv3.0.<last>.weight); 0 when it has none.
int64_t head_class_count(const std::vector<std::pair<std::string, torch::Tensor>>& state);
int64_t head_class_count(const std::map<std::string, torch::Tensor>& state);

}  // namespace detrain::weights
