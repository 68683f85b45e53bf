// Run plots drawn with OpenCV: results.png (results.csv against epoch, raw points plus a
// trend line, sigma 3 epochs, as the reference draws with matplotlib) and
// batch mosaics for train_batch*.jpg / val_pred*.jpg (boxes, class names, scores, keypoints
// and skeleton). Torch-free: callers hand over BGR images and plain numbers.
#pragma once

#include <array>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "report/metrics_log.h"

namespace detrain::report {

// scipy.ndimage.gaussian_filter1d(values, sigma) with mode 'reflect' and truncate 4.0.
std::vector<double> gaussian_smooth(const std::vector<double>& values, double sigma);

// A Gaussian-weighted (sigma in points) local linear fit at every point: the smooth line of
// results.png, which unlike gaussian_smooth does not lag behind a trend at the ends.
std::vector<double> trend_smooth(const std::vector<double>& values, double sigma);

// Every column but `epoch` and `time` against epoch, three panels a row, text sized to read
// at 160 px wide (plot_text.h): a loss's train and val columns in one panel, precision and
// recall in one, mAP50 and mAP50-95 in one (per B/P kind), the lr/pg* groups in one (a line per
// distinct schedule); losses that are zero throughout left out, non-finite values skipped.
cv::Mat draw_results(const ResultsTable& table);
// draw_results written as PNG, atomically (IoError on failure). Nothing is written for a
// table without rows.
void save_results_png(const ResultsTable& table, const std::string& path);

// One image of a batch with its boxes (ground truth, or predictions when scores are given).
struct PlotImage {
  cv::Mat image;                                 // [H, W, 3] uint8 BGR
  std::vector<std::array<float, 4>> boxes_xyxy;  // [N] pixels of `image`
  std::vector<int> classes;                      // [N] contiguous class index
  std::vector<float> scores;                     // [N] predictions; empty for ground truth
  std::vector<float> keypoints;                  // [N, K, 3] x, y, visibility (GT) or score
  std::string title;                             // drawn in the tile's corner (file name)
};

struct MosaicStyle {
  std::vector<std::string> names;            // class names (index otherwise)
  int kpt_count = 0;                         // K; 0 draws no keypoints
  std::vector<std::array<int, 2>> skeleton;  // limbs, 0-based keypoint indices
  float min_score = 0.25f;                   // predictions below are not drawn
  float min_kpt_score = 0.5f;                // keypoints below are not drawn (GT: v > 0)
  int max_images = 16;                       // tiles in one mosaic
  int max_size = 1920;                       // the mosaic's longer side at most
};

// Tiles up to max_images images in a square grid (each scaled to the largest tile size that
// fits) and draws their labels.
cv::Mat draw_batch_mosaic(const std::vector<PlotImage>& images, const MosaicStyle& style);
// Written atomically (IoError on failure): PNG or BMP when `path` says so, else JPEG
// (quality 90).
void save_batch_mosaic(const std::vector<PlotImage>& images, const MosaicStyle& style,
                       const std::string& path);

// The reference's 20-colour palette (BGR), by class index.
cv::Scalar class_colour(int index);

}  // namespace detrain::report
