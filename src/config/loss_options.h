// `loss.*`: loss gains and label assignment. Owned by src/loss/.
#pragma once

#include "config/field.h"

namespace detrain::config {

struct LossOptions {
  double box = 7.5;
  double cls = 0.5;
  double dfl = 1.5;
  double pose = 12.0;
  double kobj = 1.0;
  double rle = 1.0;
  int64_t topk = 10;
  int64_t topk_o2o = 7;
  double o2m_start = 0.8;
  double o2m_end = 0.1;

  template <class V>
  void visit(V& v) {
    v("box", box, "box (CIoU) loss gain", Constraint::range(0, 1000));
    v("cls", cls, "classification (BCE) loss gain", Constraint::range(0, 1000));
    v("dfl", dfl, "DFL gain (reg_max 16) or L1 gain (reg_max 1)", Constraint::range(0, 1000));
    v("pose", pose, "keypoint OKS loss gain", Constraint::range(0, 1000));
    v("kobj", kobj, "keypoint visibility loss gain", Constraint::range(0, 1000));
    v("rle", rle, "keypoint RLE loss gain (YOLO26-pose)", Constraint::range(0, 1000));
    v("topk", topk, "assigner candidates per object (one-to-many)", Constraint::range(1, 100));
    v("topk_o2o", topk_o2o, "assigner candidates per object before top-1 (one-to-one)",
      Constraint::range(1, 100));
    v("o2m_start", o2m_start, "end-to-end loss: one-to-many weight at the first epoch",
      Constraint::range(0, 1));
    v("o2m_end", o2m_end, "end-to-end loss: one-to-many weight at the last epoch",
      Constraint::range(0, 1));
  }
};

}  // namespace detrain::config
