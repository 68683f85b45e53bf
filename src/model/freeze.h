// train.freeze: the layers named by index (model.N...) stop training.
#pragma once

#include <cstdint>
#include <vector>

#include "model/param_info.h"

namespace detrain::model {

// Marks the parameters of `layers` as not trainable and turns their requires_grad off.
void freeze_layers(std::vector<ParamInfo>& infos, const std::vector<int64_t>& layers);

}  // namespace detrain::model
