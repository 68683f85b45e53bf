// Run plots drawn with OpenCV: results.png (results.csv against epoch, raw points plus a
// trend line, sigma 3 epochs, as the reference draws with matplotlib), batch mosaics for
// train_batch*.jpg / val_batch*_{labels,pred}.jpg and predict's drawn images (boxes, class
// names, scores, keypoints and skeleton; the drawing primitives are plots_annotate.h's).
// Torch-free: callers hand over BGR images and plain numbers.
#pragma once

#include <array>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "report/metrics_log.h"
#include "report/plots_annotate.h"

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
  std::string title;                             // mosaics: drawn in the tile's corner
};

// The reference's plot_images defaults.
constexpr int kMaxSubplots = 16, kMaxMosaicSize = 1920;

struct MosaicStyle {
  std::vector<std::string> names;            // class names (index otherwise)
  int kpt_count = 0;                         // K; 0 draws no keypoints
  std::vector<std::array<int, 2>> skeleton;  // the data set's limbs (0-based); empty: COCO's
                                             // for 17 keypoints (skeleton_for)
  // Predictions at or below it are not drawn; keypoints (and limbs) below it are not drawn,
  // ground truth's included (visibility 0). The reference's conf_thres.
  float conf_thres = kKeypointConfThres;
  int max_images = kMaxSubplots;  // tiles in one mosaic
  int max_size = kMaxMosaicSize;  // the mosaic's longer side at most
};

// The reference's plot_images: the first max_images images in a square ns x ns grid (ns =
// ceil(sqrt(n)), filled column by column, unused tiles white), scaled down so the grid's side
// is at most max_size; line width and font from the tile size; file names in the tiles'
// corners; class labels (predictions with their score to one decimal); keypoints and limbs in
// the mosaic pose colours. Images of different sizes take the largest tile.
cv::Mat draw_batch_mosaic(const std::vector<PlotImage>& images, const MosaicStyle& style);
// Written atomically (IoError on failure): PNG or BMP when `path` says so, else JPEG
// (quality 90).
void save_batch_mosaic(const std::vector<PlotImage>& images, const MosaicStyle& style,
                       const std::string& path);

// One predicted image as the reference's Results.plot draws it, at the image's own size: every
// detection of `image` (no score cut: the predictor's conf already applied), its box and
// "name 0.87" label in the class colour, line width from the image size, keypoints and limbs
// in the predict pose colours. No file name or other stamp: pixels away from the detections
// stay the photo's.
cv::Mat draw_prediction(const PlotImage& image, const MosaicStyle& style);
// draw_prediction written atomically in the format `path`'s extension names (JPEG quality 90
// unless PNG or BMP).
void save_prediction(const PlotImage& image, const MosaicStyle& style, const std::string& path);

}  // namespace detrain::report
