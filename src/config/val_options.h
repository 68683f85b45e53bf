// `val.*`: validation and prediction postprocessing. Owned by src/eval/.
#pragma once

#include "config/field.h"

namespace detrain::config {

struct ValOptions {
  double conf = 0.001;
  double iou = 0.7;
  int64_t max_det = 300;
  std::string split = "val";
  bool rect = true;
  int64_t batch = 0;
  bool save_json = true;
  bool multi_label = true;
  bool agnostic_nms = false;
  bool nms = true;
  double predict_conf = 0.25;

  template <class V>
  void visit(V& v) {
    v("conf", conf, "confidence threshold for validation detections", Constraint::range(0, 1));
    v("iou", iou, "NMS IoU threshold", Constraint::range(0, 1));
    v("max_det", max_det, "detections kept per image", Constraint::range(1, 100000));
    v("split", split, "data-set split to validate on", Constraint::one_of({"val", "train"}));
    v("rect", rect,
      "rect batches padded by half a stride (the reference); false: every image letterboxed "
      "to the square imgsz, the geometry training sees without mosaic");
    v("batch", batch, "validation batch size; 0 means twice data.batch",
      Constraint::range(0, 8192));
    v("save_json", save_json, "write predictions.json (COCO results format)");
    v("multi_label", multi_label,
      "validation NMS keeps one row per class above conf (else only each box's best class); "
      "predict always keeps the best class, as the reference's predictor");
    v("agnostic_nms", agnostic_nms, "NMS suppresses overlapping boxes across classes");
    v("nms", nms,
      "end-to-end models (YOLO26) in val and predict: true runs the one-to-many branch and NMS "
      "(Ultralytics 8.4.190's default), false the NMS-free one-to-one top-k (what export "
      "writes); models without a one-to-one branch always use NMS");
    v("predict_conf", predict_conf, "confidence threshold of `detrain predict`",
      Constraint::range(0, 1));
  }
};

}  // namespace detrain::config
