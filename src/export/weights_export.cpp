// See weights_export.h.
#include "export/weights_export.h"

#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "model/state_dict.h"

namespace detrain::exporter {

void export_safetensors(const model::YoloModelImpl& model, const std::string& path) {
  if (model.fused())
    throw ModelError("safetensors export needs the unfused model (BN folded away changes names)");
  const auto& arch = model.arch();
  std::map<std::string, std::string> metadata{{"format", "pt"},
                                              {"arch", arch.name()},
                                              {"nc", std::to_string(arch.nc)},
                                              {"producer", "detrain"}};
  if (arch.kpt_shape[0] > 0)
    metadata["kpt_shape"] = nlohmann::json({arch.kpt_shape[0], arch.kpt_shape[1]}).dump();
  model::save_weights(model, path, metadata);
}

}  // namespace detrain::exporter
