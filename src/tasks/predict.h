// `detrain predict`: runs a model on images (a file, a directory or a pattern), one at a time
// with the reference's predict letterbox (data/predict_letterbox.h) and postprocess (NMS with
// the best class per box, as the reference's predictor; fp32 unless train.precision is
// bf16-always; end-to-end models through their one-to-many branch and NMS, or their NMS-free
// one-to-one head when val.nms is false, as 8.4.190 with nms=False), and writes each image with its
// detections drawn plus the detections as COCO results (predictions.json) and the image list
// (images.json) that gives each result's image_id its file. Nothing already in the output folder is
// overwritten: a taken name gets the first free "_2", "_3", ... suffix (the two JSON files share
// theirs).
#pragma once

#include <string>
#include <vector>

#include "config/experiment.h"
#include "data/dataset.h"
#include "model/yolo_model.h"

namespace detrain::tasks {

struct PredictSummary {
  int64_t images = 0;
  int64_t detections = 0;
  int64_t unreadable = 0;  // files that did not decode (skipped and named in the log)
  std::string out_dir;
  std::string predictions_json;  // COCO results (out_dir/predictions.json, or _2, _3, ... when
  std::string images_json;       // taken) and the image list their image_ids index, same suffix
};

struct PredictOptions {
  bool recursive = false;  // a directory source: its sub-folders too
  bool draw = true;        // write each image with its detections drawn (same name/extension)
  bool save_txt = false;   // labels/<name>.txt: "class cx cy w h" normalised, YOLO format
                           // (pose: then x y score per keypoint)
};

// `source`: an image file, a directory (its .jpg/.jpeg/.png/.bmp files, sorted by name) or a
// glob pattern; see predict_sources.h. Class names and COCO ids come from `dataset` (nullptr:
// class indices, ids = index). One info line per image (file, detections, milliseconds).
PredictSummary predict_images(model::YoloModelImpl& model, const config::Experiment& experiment,
                              const data::DatasetInfo* dataset, const std::string& source,
                              const std::string& out_dir, const PredictOptions& options = {});

}  // namespace detrain::tasks
