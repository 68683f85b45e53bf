// `augment.*`: the training transform chain (reference defaults). Owned by src/data/.
#pragma once

#include "config/field.h"

namespace detrain::config {

struct AugmentOptions {
  double hsv_h = 0.015;
  double hsv_s = 0.7;
  double hsv_v = 0.4;
  double degrees = 0.0;
  double translate = 0.1;
  double scale = 0.5;
  double shear = 0.0;
  double perspective = 0.0;
  double flipud = 0.0;
  double fliplr = 0.5;
  double bgr = 0.0;
  double mosaic = 1.0;
  double mixup = 0.0;
  int64_t close_mosaic = 10;

  template <class V>
  void visit(V& v) {
    v("hsv_h", hsv_h, "hue gain (fraction)", Constraint::range(0, 1));
    v("hsv_s", hsv_s, "saturation gain (fraction)", Constraint::range(0, 1));
    v("hsv_v", hsv_v, "value gain (fraction)", Constraint::range(0, 1));
    v("degrees", degrees, "rotation range (+/- degrees)", Constraint::range(0, 180));
    v("translate", translate, "translation range (+/- fraction of the image)",
      Constraint::range(0, 0.9));
    v("scale", scale, "scale range (+/- gain)", Constraint::range(0, 0.95));
    v("shear", shear, "shear range (+/- degrees)", Constraint::range(0, 89));
    v("perspective", perspective, "perspective range (+/- fraction)", Constraint::range(0, 0.001));
    v("flipud", flipud, "probability of a vertical flip", Constraint::range(0, 1));
    v("fliplr", fliplr, "probability of a horizontal flip", Constraint::range(0, 1));
    v("bgr", bgr, "probability of keeping BGR channel order", Constraint::range(0, 1));
    v("mosaic", mosaic, "probability of a 4-image mosaic", Constraint::range(0, 1));
    v("mixup", mixup, "probability of mixup", Constraint::range(0, 1));
    v("close_mosaic", close_mosaic, "turn mosaic and mixup off for the last N epochs",
      Constraint::range(0, 100000));
  }
};

}  // namespace detrain::config
