// From the head's decoded output to detections in original image pixels and COCO results
// records: the NMS path (reference non_max_suppression: conf filter, multi-label rows,
// class-offset boxes, greedy IoU suppression, max_det) and the end-to-end path (one-to-one
// top-k rows filtered by score), keypoints carried along. Differences from the reference:
// greedy NMS is our own (no torchvision), compares only boxes of one class (identical result:
// offset boxes of different classes never overlap) and stops once max_det boxes are kept;
// letterbox inversion uses separate x and y ratios (the reference uses the y ratio for both).
#pragma once

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <vector>

#include "config/val_options.h"
#include "eval/coco_record.h"
#include "geometry/image_frame.h"

namespace detrain::infer {

// Detections of one image. Pixels of the network input until mapped with to_original_pixels.
struct ImageDetections {
  torch::Tensor boxes_xyxy;  // [N, 4] float x1, y1, x2, y2
  torch::Tensor scores;      // [N] float, descending
  torch::Tensor classes;     // [N] int64 contiguous class index
  torch::Tensor keypoints;   // [N, K, 3] float x, y, visibility score; undefined without
  int64_t size() const { return scores.defined() ? scores.size(0) : 0; }
};

// One image's detections as plain CPU numbers, the float32 and int64 the tensors hold: the one
// conversion behind every writer that loops over detections (COCO records, YOLO txt, plots).
struct DetectionArrays {
  std::vector<std::array<float, 4>> boxes_xyxy;  // [N] x1, y1, x2, y2
  std::vector<float> scores;                     // [N]
  std::vector<int64_t> classes;                  // [N] contiguous class index
  std::vector<float> keypoints;                  // [N, K, 3] x, y, score; empty without
  int64_t kpt_count = 0;                         // K; 0 without keypoints or detections
  size_t size() const { return scores.size(); }
};

// Copies `detections` (any device, any floating type) to the CPU as DetectionArrays.
DetectionArrays to_arrays(const ImageDetections& detections);

struct NmsOptions {
  double conf = 0.001;      // val.conf: keep class scores strictly above this
  double iou = 0.7;         // val.iou: suppress overlaps strictly above this
  int64_t max_det = 300;    // val.max_det: boxes kept per image
  bool multi_label = true;  // one row per class above conf (else the best class only)
  bool agnostic = false;    // suppress across classes
  int64_t max_nms = 30000;  // highest-scoring rows that enter NMS
  double max_wh = 7680.0;   // class offset in pixels (boxes must be smaller than this)
};

// val.{conf, iou, max_det, multi_label, agnostic_nms}; `predict` takes val.predict_conf and,
// as the reference's predictor does, one row per box (its best class).
NmsOptions nms_options(const config::ValOptions& val, bool predict = false);

// decoded: [B, 4 + nc + K*3, A] from the head (boxes cx, cy, w, h in input pixels; sigmoid
// class scores; keypoints x, y, visibility per keypoint), on any device. Returns B images.
std::vector<ImageDetections> nms_postprocess(const torch::Tensor& decoded, int64_t nc,
                                             const NmsOptions& options);

// Greedy NMS of boxes already sorted by descending score. Returns kept row indices in order,
// at most `max_keep` (<= 0: no limit). `groups` (may be empty: one group) holds a group id per
// box; boxes of different groups never suppress each other.
// boxes_xyxy: [N, 4] float CPU contiguous.
std::vector<int64_t> greedy_nms(const torch::Tensor& boxes_xyxy, const std::vector<int64_t>& groups,
                                double iou_threshold, int64_t max_keep);

// detections: [B, k, 6 + K*3] end-to-end top-k rows (x1, y1, x2, y2, score, class, keypoints),
// score-descending. Keeps rows with score > conf, at most max_det.
std::vector<ImageDetections> end2end_postprocess(const torch::Tensor& detections, double conf,
                                                 int64_t max_det);

// Undoes the letterbox: subtract pad, divide by ratio, clip boxes and keypoint x/y to
// [0, width] x [0, height]. Returns new tensors on the CPU.
ImageDetections to_original_pixels(const ImageDetections& detections,
                                   const geometry::ImageFrame& frame);

// Records of one image's detections (in original pixels). `coco_ids` maps a contiguous class
// index to its COCO category id; throws DataError for a class outside the map.
std::vector<eval::CocoRecord> to_coco_records(const ImageDetections& detections, int64_t image_id,
                                              const std::vector<int64_t>& coco_ids,
                                              const eval::RecordRounding& rounding = {});

}  // namespace detrain::infer
