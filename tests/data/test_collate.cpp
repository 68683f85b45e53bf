// collate's image layout: BGR samples become RGB planes of [B, 3, H, W] (BGR planes when the
// sample keeps BGR), for continuous images and for ROIs of larger ones alike; channels-last
// batches hold the same values with interleaved pixels in memory.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <opencv2/core.hpp>

#include "data/collate.h"

using namespace detrain::data;

namespace {

// A 5 x 4 image whose pixel (y, x) is (B, G, R) = (10y + x, 100 + x, 200 + y).
cv::Mat coded_image() {
  cv::Mat img(4, 5, CV_8UC3);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 5; ++x)
      img.at<cv::Vec3b>(y, x) = {static_cast<uint8_t>(10 * y + x), static_cast<uint8_t>(100 + x),
                                 static_cast<uint8_t>(200 + y)};
  return img;
}

}  // namespace

TEST_CASE("collate writes RGB planes, or BGR planes for keep_bgr", "[unit][data][collate]") {
  const cv::Mat image = coded_image();
  cv::Mat wide(6, 9, CV_8UC3, cv::Scalar::all(0));
  image.copyTo(wide(cv::Rect(2, 1, 5, 4)));
  std::vector<Sample> samples(3);
  samples[0].image = image;
  samples[1].image = image;
  samples[1].keep_bgr = true;
  samples[2].image = wide(cv::Rect(2, 1, 5, 4));  // not continuous
  REQUIRE_FALSE(samples[2].image.isContinuous());
  const bool channels_last = GENERATE(false, true);
  INFO("channels_last " << channels_last);
  const Batch batch = collate(samples, /*pin_memory=*/false, channels_last);
  REQUIRE(batch.images.sizes() == torch::IntArrayRef({3, 3, 4, 5}));
  if (channels_last) {
    CHECK(batch.images.strides() == torch::IntArrayRef({60, 1, 15, 3}));  // [B, H, W, 3] bytes
    CHECK(torch::equal(batch.images, collate(samples).images));
  } else {
    CHECK(batch.images.is_contiguous());
  }
  const auto img = batch.images.to(torch::kInt32);  // [3, 3, 4, 5]
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t y = 0; y < 4; ++y)
      for (int64_t x = 0; x < 5; ++x) {
        const int64_t b = 10 * y + x, g = 100 + x, r = 200 + y;  // coded_image's values
        INFO("sample " << i << " pixel (" << y << ", " << x << ")");
        const bool bgr = i == 1;
        CHECK(img[i][0][y][x].item<int64_t>() == (bgr ? b : r));
        CHECK(img[i][1][y][x].item<int64_t>() == g);
        CHECK(img[i][2][y][x].item<int64_t>() == (bgr ? r : b));
      }
}
