// Every head output in the backward graph, on every rank. A rank whose micro-batch has no
// target leaves its box (and keypoint) outputs out of the loss, so backward never reaches those
// branches there while it does on the others. Under train.sync_bn each BatchNorm that backward
// reaches all-reduces its gradient statistics, so the ranks would then call different
// collectives and hang or pair the wrong ones. Tied to the loss with a zero gradient, every
// output is reached everywhere: the same graph, the same collectives, and for those parameters
// the same zero contribution that the gradient reducer gives an unused one.
#pragma once

#include <torch/types.h>

#include "model/heads.h"

namespace detrain::train {

// `loss` (same value) with every defined output of `out` joined to its graph with a zero
// gradient.
torch::Tensor tie_head_outputs(const torch::Tensor& loss, const model::TrainOutput& out);

}  // namespace detrain::train
