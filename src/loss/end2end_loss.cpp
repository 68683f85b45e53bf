// End-to-end weight schedule; see end2end_loss.h. The reference keeps the start value for
// epoch 0 and only applies its decay formula from the first update on; so do we.
#include "loss/end2end_loss.h"

#include <algorithm>

namespace detrain::loss {

End2EndWeights end2end_weights(int64_t epoch, int64_t epochs, double o2m_start, double o2m_end) {
  End2EndWeights w;
  if (epoch <= 0) {
    w.o2m = o2m_start;
  } else {
    const double span = static_cast<double>(std::max<int64_t>(epochs - 1, 1));
    w.o2m =
        std::max(1.0 - static_cast<double>(epoch) / span, 0.0) * (o2m_start - o2m_end) + o2m_end;
  }
  w.o2o = std::max(1.0 - w.o2m, 0.0);
  return w;
}

}  // namespace detrain::loss
