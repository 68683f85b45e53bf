// The one command list; see command_table.h.
#include "command_table.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace detrain::cli {

const std::vector<CommandEntry>& command_table() {
  static const std::vector<CommandEntry> table = {
      {"config", "show or dump the resolved configuration"},
      {"model", "build an architecture from its YAML: layer table, parameters, GFLOPs, census"},
      {"bench", "measure speed (prints a table; --json for JSON)"},
      {"eval", "score COCO results (bbox or keypoints) exactly as pycocotools does"},
      {"train", "train a detector or pose model"},
      {"val", "validate weights with the COCO metrics"},
      {"predict", "detect objects (and keypoints) in images"},
      {"export", "write a model as ONNX or reference-named safetensors"},
      {"data", "look at a data set (preview, stats) or make one (synth)"},
  };
  return table;
}

const char* command_description(const char* name) {
  for (const CommandEntry& entry : command_table())
    if (std::strcmp(entry.name, name) == 0) return entry.description;
  throw std::logic_error(std::string("command '") + name + "' is not in apps/command_table.cpp");
}

}  // namespace detrain::cli
