// See freeze.h.
#include "model/freeze.h"

#include <string>

namespace detrain::model {

void freeze_layers(std::vector<ParamInfo>& infos, const std::vector<int64_t>& layers) {
  for (auto& info : infos) {
    for (int64_t layer : layers) {
      const std::string prefix = "model." + std::to_string(layer) + ".";
      if (info.name.rfind(prefix, 0) == 0) {
        info.trainable = false;
        info.param.set_requires_grad(false);
      }
    }
  }
}

}  // namespace detrain::model
