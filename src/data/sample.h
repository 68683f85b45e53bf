// One training or validation sample between transforms: an OpenCV BGR image and its labels in
// that image's pixels, plus the label operations every geometric transform shares (one 3x3
// matrix for boxes and keypoints, clipping with keypoint visibility). Keypoints that leave the
// image get visibility 0 as in the reference's Instances.clip.
#pragma once

#include <cstdint>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "data/coco_records.h"

namespace detrain::data {

// How the sample's image was placed: input px = original px * ratio + pad, per axis.
struct Placement {
  double ratio_x = 1.0;
  double ratio_y = 1.0;
  double pad_left = 0.0;
  double pad_top = 0.0;
};

struct Sample {
  cv::Mat image;                       // [H, W, 3] uint8 BGR
  std::vector<BoxXyxy> boxes_xyxy_px;  // [N]
  std::vector<int32_t> classes;        // [N]
  std::vector<float> keypoints_px;     // [N, K, 3] x, y, visibility; empty when K == 0
  int64_t kpt_count = 0;               // K
  // Provenance of the main (first) image, for val frames and previews.
  int64_t record_index = -1;
  int64_t image_id = -1;
  int32_t orig_width = 0;
  int32_t orig_height = 0;
  Placement placement;
  std::string file;
  bool keep_bgr = false;  // augment.bgr: the batch keeps this image in BGR order

  size_t size() const { return boxes_xyxy_px.size(); }
  int width() const { return image.cols; }
  int height() const { return image.rows; }
  // Keeps rows where keep[i] is true (boxes, classes and keypoints together).
  void keep_rows(const std::vector<uint8_t>& keep);
  // Appends all labels of `other` (same K), shifted by (dx, dy).
  void append_labels(const Sample& other, float dx, float dy);
};

// A sample from a record and its loaded image (labels scaled from the record's original size
// to the image's size).
Sample sample_from_record(const ImageRecord& record, int64_t kpt_count, const cv::Mat& image,
                          int64_t record_index);

// Scales labels by (sx, sy) then shifts them by (dx, dy).
void scale_shift_labels(Sample& sample, double sx, double sy, double dx, double dy);

// Clips boxes to [0, w] x [0, h]; keypoints outside get visibility 0 and are clipped.
void clip_labels(Sample& sample, float w, float h);

// Drops boxes with zero width or height (the reference's remove_zero_area_boxes).
void drop_empty_boxes(Sample& sample);

}  // namespace detrain::data
