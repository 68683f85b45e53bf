// The end-to-end ("ProgLoss") weighting of YOLO26: total = o2m * L_one2many + o2o * L_one2one,
// with o2m moving linearly from o2m_start to o2m_end over the run. A pure function of the
// epoch, so a resumed run gets the reference's weights at any epoch without replaying updates.
#pragma once

#include <cstdint>

namespace detrain::loss {

struct End2EndWeights {
  double o2m = 0.8;
  double o2o = 1.0 - 0.8;
};

// Weights for training epoch `epoch` (0-based; = epochs completed) of `epochs`. Epoch 0 gives
// exactly o2m_start and 1 - o2m_start; later epochs max(1 - e / max(epochs - 1, 1), 0) *
// (o2m_start - o2m_end) + o2m_end, with o2o = max(1 - o2m, 0), all in float64 as the
// reference's Python scalars.
End2EndWeights end2end_weights(int64_t epoch, int64_t epochs, double o2m_start = 0.8,
                               double o2m_end = 0.1);

}  // namespace detrain::loss
