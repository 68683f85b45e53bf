// The architecture YAML interpreter: reads models/*.yaml (rows [from, repeats, module, args]
// plus nc, kpt_shape, reg_max, end2end and a scales table), applies the scale rules (repeat
// rounding, make_divisible(min(c, max_channels) * width, 8), C3k forced at m/l/x) and builds
// the layers through the one name -> constructor table. Deliberate differences from the
// reference's parse_model: an output width equal to nc is scaled like any other (the reference
// skips it), and strides come from the layer table instead of a forward pass on a blank image.
#pragma once

#include <torch/torch.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "model/heads.h"

namespace detrain::model {

// What to build.
struct BuildOptions {
  std::string arch = "models/yolo26.yaml";  // YAML path; "yolo26n" / "yolo26n-pose.yaml" also pick
                                            // the scale from the name
  std::string scale;                        // n/s/m/l/x; empty: the name's, else the first scale
  int64_t nc = 0;                           // 0: the YAML's nc
  std::optional<std::array<int64_t, 2>> kpt_shape;  // overrides the YAML's (pose heads)
  int64_t cls_width = 0;                            // HeadOptions::cls_width
};

// The architecture after scale resolution.
struct ArchInfo {
  std::string path;    // the YAML file read
  std::string family;  // file stem, e.g. "yolo26-pose"
  std::string scale;   // "n"; "" for a YAML without a scales table (depth/width_multiple)
  double depth = 1.0, width = 1.0;
  int64_t max_channels = 0;
  int64_t nc = 0;
  std::array<int64_t, 2> kpt_shape{0, 0};  // {0, 0} for detection models
  int64_t reg_max = 16;
  bool end2end = false;
  std::vector<int64_t> strides;  // head input strides, e.g. {8, 16, 32}

  // "yolo26n-pose": the family with the scale after its first word.
  std::string name() const;
};

// One built row, as the layer table prints it.
struct LayerRow {
  int index = 0;
  std::vector<int> from;  // absolute layer indices; -1 is the network input
  std::string from_text;  // as written in the YAML: "-1", "[-1, 6]"
  int repeats = 1;        // after depth scaling (modules that repeat inside count as 1)
  std::string module;     // YAML module name ("Conv", "C3k2", "nn.Upsample", "Detect")
  std::string args;       // resolved arguments as the reference prints them, e.g. [3, 16, 3, 2]
  int64_t out_channels = 0;
  int64_t stride = 1;  // total stride of the layer's output relative to the input
};

// Layers 0..N-2 (single-input modules, or Concat taking a vector) and the head (last row).
struct Network {
  ArchInfo arch;
  std::vector<LayerRow> rows;
  std::vector<torch::nn::AnyModule> layers;  // one per row except the head
  Head head{nullptr};
};

// Finds the YAML (as given, with ".yaml", under models/, or with the scale letter stripped
// from the name) and returns its path and the scale the name implies ("" if none). Throws
// ModelError listing the available models when nothing matches.
std::pair<std::string, std::string> resolve_arch(const std::string& arch);

// Reads and builds. Throws ModelError (bad YAML, unknown module, bad indices or arguments) or
// IoError (unreadable file), each naming the file and row.
Network build_network(const BuildOptions& options);

// Reads and checks every row as build_network does, building no layer (`layers` and `head` stay
// empty; the rows are filled). Throws the same errors.
Network check_network(const BuildOptions& options);

// Names the table knows, for messages and docs.
std::vector<std::string> known_modules();

}  // namespace detrain::model
