// The predict letterbox and its inverse against Ultralytics 8.4.190: LetterBox(320, auto=True,
// stride=32) on a grey image of each size and ops.scale_boxes of the box (10, 20, 300, 200) in
// float64, run by hand with the reference environment (the values below are its output).
#include <algorithm>
#include <catch2/catch.hpp>
#include <opencv2/core.hpp>

#include "data/predict_letterbox.h"

using namespace detrain;

namespace {

struct Case {
  int h, w;        // original image
  int in_h, in_w;  // letterboxed input
  int left, top;   // first image column / row in the input
  double box[4];   // scale_boxes of (10, 20, 300, 200)
};

const Case kCases[] = {
    {427, 640, 224, 320, 0, 5, {20.0, 29.929906542056074, 600.0, 389.08878504672896}},
    {480, 640, 256, 320, 0, 8, {20.0, 24.0, 600.0, 384.0}},
    {500, 333, 320, 224, 5, 0, {7.816901408450704, 31.25, 333.0, 312.5}},
    {50, 100, 160, 320, 0, 0, {3.125, 6.25, 93.75, 50.0}},  // scaled up
    {7, 1000, 32, 320, 0, 15, {31.25, 7.0, 937.5, 7.0}},    // a 2-px tall resize, clipped box
    {640, 640, 320, 320, 0, 0, {20.0, 40.0, 600.0, 400.0}},
};

}  // namespace

TEST_CASE("predict letterbox: the reference's shapes, pads and scale_boxes",
          "[unit][data][predict]") {
  for (const Case& c : kCases) {
    CAPTURE(c.h, c.w);
    const cv::Mat image(c.h, c.w, CV_8UC3, cv::Scalar::all(200));
    const data::PredictInput in = data::predict_letterbox(image, 320, 32);
    CHECK(in.image.rows == c.in_h);
    CHECK(in.image.cols == c.in_w);
    // The first image pixel (200) after the grey (114) padding.
    int left = 0, top = 0;
    while (left < in.image.cols && in.image.at<cv::Vec3b>(in.image.rows / 2, left)[0] != 200)
      ++left;
    while (top < in.image.rows && in.image.at<cv::Vec3b>(top, in.image.cols / 2)[0] != 200) ++top;
    CHECK(left == c.left);
    CHECK(top == c.top);
    const auto& f = in.frame;
    const double box[4] = {10, 20, 300, 200};
    for (int i = 0; i < 4; ++i) {
      const bool x = i % 2 == 0;
      double v = (box[i] - (x ? f.pad_left : f.pad_top)) / (x ? f.ratio_x : f.ratio_y);
      v = std::clamp(v, 0.0, static_cast<double>(x ? f.orig_width : f.orig_height));
      // One division and one subtraction in float64 on both sides: equal to a few ulps.
      CHECK(v == Approx(c.box[i]).epsilon(1e-12));
    }
  }
}

TEST_CASE("predict letterbox without minimal padding fills imgsz x imgsz",
          "[unit][data][predict]") {
  const cv::Mat image(427, 640, CV_8UC3, cv::Scalar::all(200));
  const data::PredictInput in = data::predict_letterbox(image, 320, 32, /*minimal_pad=*/false);
  CHECK(in.image.rows == 320);
  CHECK(in.image.cols == 320);
  CHECK(in.frame.pad_top == 53);  // round((320 - 214) / 2 - 0.1)
}
