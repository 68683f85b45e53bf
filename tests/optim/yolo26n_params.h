// Test fixture shared by the optimizer tests: yolo26n's (nc 80) parameter descriptions. The
// tensors outlive the model object, which is all the optimizer tests need.
#pragma once

#include <vector>

#include "model/param_info.h"
#include "model/yolo_model.h"

namespace detrain::test {

inline std::vector<model::ParamInfo> yolo26n_params() {
  model::BuildOptions options;
  options.arch = "models/yolo26.yaml";
  options.scale = "n";
  options.nc = 80;
  model::YoloModel net(options);
  return net->param_infos();
}

}  // namespace detrain::test
