// `detrain predict`'s drawn images: the photo itself wherever no detection is drawn, with no
// file-name stamp (predict_images on a fresh pose model, whose untrained head finds nothing at
// the predictor's conf 0.25, must give back the input picture pixel for pixel).
#include <opencv2/imgcodecs.hpp>

#include "config/experiment.h"
#include "model/yolo_model.h"
#include "tasks/predict.h"
#include "test_support.h"

// After the project headers: LibTorch's c10 logging defines a CHECK of its own (an abort).
#include <catch2/catch.hpp>

using namespace detrain;
using detrain::test::TempDir;

TEST_CASE("predict writes the photo without a stamp where nothing is detected",
          "[unit][predict][plots]") {
  TempDir dir("predict_drawing");
  // A photo-like picture (PNG, so the output compares bit for bit).
  cv::Mat photo(96, 128, CV_8UC3);
  for (int y = 0; y < photo.rows; ++y)
    for (int x = 0; x < photo.cols; ++x)
      photo.at<cv::Vec3b>(y, x) = cv::Vec3b(2 * x % 256, 2 * y % 256, (x * y) % 256);
  REQUIRE(cv::imwrite(dir.file("photo.png"), photo));

  config::Experiment x;
  x.data.imgsz = 64;
  config::ModelOptions options;
  options.arch = "models/yolo11-pose.yaml";
  options.scale = "n";
  model::YoloModel model = model::make_model(options, 1, std::array<int64_t, 2>{17, 3});
  const tasks::PredictSummary s =
      tasks::predict_images(*model, x, nullptr, dir.file("photo.png"), dir.file("out"));
  REQUIRE(s.images == 1);
  REQUIRE(s.detections == 0);  // a fresh head's class scores start near 0.01
  const cv::Mat drawn = cv::imread(dir.file("out/photo.png"));
  REQUIRE(drawn.size() == photo.size());
  cv::Mat diff;
  cv::absdiff(drawn, photo, diff);
  CHECK(cv::countNonZero(diff.reshape(1)) == 0);
}
