// Ultralytics 8.4.190's predict preprocessing for one image: LetterBox(imgsz, auto=True,
// stride) as its predictor builds it for a .pt model with batch 1 (resize the long side to
// imgsz with INTER_LINEAR, then pad each axis only up to the next multiple of the stride, grey
// 114, centred), and the frame its scale_boxes / scale_coords undo it with (gains per axis from
// the rounded resized sides, pads rounded as the letterbox rounds them). Validation letterboxes
// differently (rect batches: a load to long side imgsz, then a pad up to the batch shape, half
// a stride more), so predict and val boxes of one image can differ slightly, as they do in the
// reference. No LibTorch.
#pragma once

#include <opencv2/core.hpp>

#include "geometry/image_frame.h"

namespace detrain::data {

struct PredictInput {
  cv::Mat image;               // letterboxed, same channel order as the input
  geometry::ImageFrame frame;  // input pixels -> original pixels
};

// `minimal_pad` false pads to imgsz x imgsz (the reference's auto=False, e.g. for exported
// fixed-shape models).
PredictInput predict_letterbox(const cv::Mat& image, int imgsz, int stride,
                               bool minimal_pad = true);

// scale_boxes' mapping from an input of input_h x input_w back to an orig_h x orig_w image.
geometry::ImageFrame predict_frame(int input_h, int input_w, int orig_h, int orig_w);

}  // namespace detrain::data
