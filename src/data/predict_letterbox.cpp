#include "data/predict_letterbox.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

#include "data/letterbox.h"
#include "data/pad_value.h"

namespace detrain::data {

PredictInput predict_letterbox(const cv::Mat& image, int imgsz, int stride, bool minimal_pad) {
  const int h = image.rows, w = image.cols;
  const double r = std::min(static_cast<double>(imgsz) / h, static_cast<double>(imgsz) / w);
  const int new_w = std::max(static_cast<int>(python_round(w * r)), 1);
  const int new_h = std::max(static_cast<int>(python_round(h * r)), 1);
  double dw = imgsz - new_w, dh = imgsz - new_h;
  if (minimal_pad) {
    dw = std::fmod(dw, stride);  // numpy's mod: both operands are non-negative here
    dh = std::fmod(dh, stride);
  }
  dw /= 2;
  dh /= 2;
  PredictInput out;
  if (new_w != w || new_h != h)
    cv::resize(image, out.image, cv::Size(new_w, new_h), 0, 0, cv::INTER_LINEAR);
  else
    out.image = image;
  const int top = static_cast<int>(python_round(dh - 0.1));
  const int bottom = static_cast<int>(python_round(dh + 0.1));
  const int left = static_cast<int>(python_round(dw - 0.1));
  const int right = static_cast<int>(python_round(dw + 0.1));
  if (top || bottom || left || right) {
    cv::Mat padded;
    cv::copyMakeBorder(out.image, padded, top, bottom, left, right, cv::BORDER_CONSTANT,
                       cv::Scalar::all(kPadGrey));
    out.image = padded;
  }
  out.frame = predict_frame(out.image.rows, out.image.cols, h, w);
  return out;
}

geometry::ImageFrame predict_frame(int input_h, int input_w, int orig_h, int orig_w) {
  const double gain =
      std::min(static_cast<double>(input_h) / orig_h, static_cast<double>(input_w) / orig_w);
  const int new_h = std::max(static_cast<int>(python_round(orig_h * gain)), 1);
  const int new_w = std::max(static_cast<int>(python_round(orig_w * gain)), 1);
  geometry::ImageFrame f;
  f.orig_width = orig_w;
  f.orig_height = orig_h;
  f.ratio_x = static_cast<double>(new_w) / orig_w;
  f.ratio_y = static_cast<double>(new_h) / orig_h;
  f.pad_left = python_round((input_w - new_w) / 2.0 - 0.1);
  f.pad_top = python_round((input_h - new_h) / 2.0 - 0.1);
  return f;
}

}  // namespace detrain::data
