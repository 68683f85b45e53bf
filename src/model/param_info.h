// What the optimizer needs to know about each parameter, described by the model from its
// module types (never by regexes on names): which module kind owns it and whether it sits in a
// head classification tower. Names follow the reference ("model.23.cv3.0.1.conv.weight").
#pragma once

#include <torch/types.h>

#include <string>
#include <vector>

namespace detrain::model {

struct ParamInfo {
  std::string name;           // reference state-dict name
  torch::Tensor param;        // the parameter itself (shares storage with the model)
  bool in_norm = false;       // owned by a normalisation module (BatchNorm2d, ...)
  bool is_bias = false;       // a bias, including BatchNorm's
  bool in_cls_tower = false;  // inside a head's classification tower (cv3 / one2one_cv3)
  bool trainable = true;      // false for frozen parameters (e.g. the DFL projection)
};

}  // namespace detrain::model
