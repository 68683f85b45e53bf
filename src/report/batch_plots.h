// train_batch*.jpg and val_pred*.jpg: a training batch with its targets, and a validation
// batch with its predictions, turned into the torch-free PlotImage tiles of plots.h.
#pragma once

#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "data/coco_records.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "infer/postprocess.h"
#include "infer/validate.h"
#include "report/plots.h"

namespace detrain::report {

// `detections` (pixels of tile.image) as the tile's boxes, classes, scores and keypoints.
void set_predictions(PlotImage& tile, const infer::DetectionArrays& detections);

// The batch's images (uint8 RGB) with their target boxes, class names and keypoints in one
// square mosaic (BGR), as the model receives them: the first `max_images` (0: every one, as
// `data preview --n` asks).
cv::Mat draw_batch_targets(const data::Batch& batch, const data::DatasetInfo& dataset,
                           int max_images = 0);

// draw_batch_targets of the first 16 images (the reference's max_subplots) written as JPEG
// (atomically): train_batch*.jpg.
void save_train_batch_plot(const data::Batch& batch, const data::DatasetInfo& dataset,
                           const std::string& path);

// A validation batch with its detections (network-input pixels), written as a mosaic whose
// tiles are titled by `titles` (file names): the first 16 images, in the same grid as
// save_val_labels_plot's so the two pictures compare tile by tile.
void save_val_prediction_plot(const infer::ValBatch& batch,
                              const std::vector<infer::ImageDetections>& detections,
                              const data::DatasetInfo& dataset,
                              const std::vector<std::string>& titles, const std::string& path);

// The same batch with its ground truth (`records[i]` for image i, original pixels, mapped
// through the letterbox), for val_batch{i}_labels.jpg beside the predictions.
void save_val_labels_plot(const infer::ValBatch& batch,
                          const std::vector<const data::ImageRecord*>& records,
                          const data::DatasetInfo& dataset, const std::string& path);

}  // namespace detrain::report
