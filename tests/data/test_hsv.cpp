// RandomHSV against the reference's formula: the expected pixels below were computed by
// tests/data/hsv_reference.py, which runs the reference's RandomHSV body (numpy LUTs with its
// floored % and astype truncation, cv2 split / LUT / merge) with fixed gains. Tolerance: 0
// levels. Both sides apply integer lookup tables between the same OpenCV 4.6 uint8 colour
// conversions (Debian's python3-opencv and the C++ build share libopencv-imgproc), so any
// difference is a different table, which is exactly what this test is for. Where the fused pass
// runs, these 4 x 4 images go through it (every pixel in OpenCV's scalar remainder); its kernels
// are checked against OpenCV's conversions on every colour in tests/data/test_hsv_kernels.cpp.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <vector>

#include "common/rng.h"
#include "data/decode.h"
#include "data/hsv.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::data;

namespace {

using Pixel = std::array<int, 3>;  // B, G, R

// hsv_reference.py's PIXELS: greys, primaries, hues either side of the 0/180 wrap, low and high
// saturation, dark and bright values: 16 B, G, R triples, a 4 x 4 image in row order.
const std::vector<int> kPixels = {0,   0,   0,  128, 128, 128, 255, 255, 255, 255, 0,   0,
                                  0,   255, 0,  0,   0,   255, 200, 60,  30,  120, 110, 100,
                                  250, 10,  0,  245, 0,   250, 10,  0,   250, 3,   250, 240,
                                  17,  34,  51, 240, 230, 220, 90,  200, 140, 64,  0,   128};

struct Case {
  HsvGains gains;
  std::vector<int> expected;  // 16 B, G, R triples printed by hsv_reference.py (numpy
                              // 1.24.2, OpenCV 4.6.0)
};

const std::vector<Case> kCases = {
    {{0.0123, -0.45, 0.31},
     {0,   0,   0,   167, 167, 167, 255, 255, 255, 255, 115, 124, 124, 255, 115, 115,
      124, 255, 255, 148, 136, 157, 149, 143, 255, 115, 120, 241, 115, 255, 115, 120,
      255, 117, 255, 241, 42,  56,  66,  255, 249, 244, 178, 255, 209, 115, 75,  167}},
    // The largest negative hue shift of the default hsv_h: hues below 2.7 wrap to 177+.
    {{-0.015, 0.7, -0.4},
     {0,   0,   0,   76,  76, 76, 153, 153, 153, 153, 15, 0,   0,  153, 15, 15,
      0,   153, 120, 32,  0,  72, 64,  51,  150, 20,  0,  150, 0,  140, 20, 0,
      150, 0,   140, 150, 0,  12, 30,  144, 136, 124, 8,  120, 71, 46,  0,  76}},
    // Value only.
    {{0.0, 0.0, 0.25},
     {0,   0,   0,   160, 160, 160, 255, 255, 255, 255, 0,   0,   0,   255, 0, 0,
      0,   255, 250, 73,  37,  150, 137, 125, 255, 8,   0,   246, 0,   255, 8, 0,
      255, 3,   255, 247, 21,  42,  63,  255, 244, 234, 113, 250, 177, 80,  0, 160}},
    // Hue and saturation only: saturation clips at 255, greys (saturation 0) stay grey.
    {{0.004, 0.66, 0.0},
     {0,   0,   0,   128, 128, 128, 255, 255, 255, 255, 0,  0,   0,   255, 0, 0,
      0,   255, 200, 33,  0,   120, 103, 87,  250, 8,   0,  242, 0,   250, 8, 0,
      250, 0,   250, 242, 0,   26,  51,  240, 224, 208, 18, 200, 103, 64,  0, 128}},
};

constexpr size_t kCount = 16;

Pixel pixel(const std::vector<int>& values, size_t i) {
  return {values[3 * i], values[3 * i + 1], values[3 * i + 2]};
}

cv::Mat image_of(const std::vector<int>& values) {
  cv::Mat img(4, 4, CV_8UC3);
  for (size_t i = 0; i < kCount; ++i)
    img.at<cv::Vec3b>(static_cast<int>(i / 4), static_cast<int>(i % 4)) = {
        static_cast<uint8_t>(values[3 * i]), static_cast<uint8_t>(values[3 * i + 1]),
        static_cast<uint8_t>(values[3 * i + 2])};
  return img;
}

Pixel pixel_at(const cv::Mat& img, size_t i) {
  const cv::Vec3b p = img.at<cv::Vec3b>(static_cast<int>(i / 4), static_cast<int>(i % 4));
  return {p[0], p[1], p[2]};
}

}  // namespace

TEST_CASE("apply_hsv gives the reference formula's pixels", "[unit][data]") {
  for (const auto& c : kCases) {
    cv::Mat img = image_of(kPixels);
    apply_hsv(img, c.gains);
    REQUIRE(c.expected.size() == 3 * kCount);
    for (size_t i = 0; i < kCount; ++i) {
      const Pixel in = pixel(kPixels, i);
      INFO("gains (" << c.gains.h << ", " << c.gains.s << ", " << c.gains.v << "), pixel " << i
                     << " (" << in[0] << ", " << in[1] << ", " << in[2] << ")");
      CHECK(pixel_at(img, i) == pixel(c.expected, i));
    }
  }
}

TEST_CASE("apply_hsv with zero gains leaves the image untouched", "[unit][data]") {
  // The reference skips RandomHSV when all three gains are 0; so does detrain (no colour
  // round trip), so hsv_h = hsv_s = hsv_v = 0 leaves every byte as it was.
  cv::Mat img = image_of(kPixels);
  apply_hsv(img, {});
  for (size_t i = 0; i < kCount; ++i) CHECK(pixel_at(img, i) == pixel(kPixels, i));
}

TEST_CASE("draw_hsv draws each gain uniformly in [-gain, gain]", "[unit][data]") {
  Rng rng(7);
  double lo[3] = {1, 1, 1}, hi[3] = {-1, -1, -1}, sum[3] = {0, 0, 0};
  const double gain[3] = {0.015, 0.7, 0.4};
  constexpr int kDraws = 20000;
  for (int i = 0; i < kDraws; ++i) {
    const HsvGains g = draw_hsv(rng, gain[0], gain[1], gain[2]);
    const double r[3] = {g.h / gain[0], g.s / gain[1], g.v / gain[2]};  // in [-1, 1)
    for (int k = 0; k < 3; ++k) {
      lo[k] = std::min(lo[k], r[k]);
      hi[k] = std::max(hi[k], r[k]);
      sum[k] += r[k];
    }
  }
  for (int k = 0; k < 3; ++k) {
    INFO("channel " << k);
    CHECK(lo[k] >= -1.0);
    CHECK(hi[k] < 1.0);
    CHECK(lo[k] < -0.99);  // the whole range is reached
    CHECK(hi[k] > 0.99);
    // Mean of U(-1, 1) is 0 with standard error 1 / sqrt(3 * 20000) = 0.0041; 5 sigma.
    CHECK(std::abs(sum[k] / kDraws) < 0.02);
  }
  CHECK(draw_hsv(rng, 0, 0, 0).h == 0);  // zero gain: no shift at all
}

TEST_CASE("apply_hsv equals OpenCV's conversions on a 32 px wide image and region",
          "[unit][data]") {
  // hsv_reference.py's 16 pixels repeated across a 32 x 4 image, and the same inside a larger
  // image (a region of interest: rows not contiguous). The expectation is OpenCV's own result
  // on the same image, not the printed values above: OpenCV computes a row's 32-pixel blocks
  // with its AVX2 kernel and the remainder with scalar code that rounds differently, so the
  // 4 x 4 image of hsv_reference.py (all remainder) can differ by a level from the same pixel
  // inside a 640-pixel row (e.g. pixel 3 at the first gains: G 115 there, 114 here).
  for (const auto& c : kCases) {
    cv::Mat tile = image_of(kPixels), wide, framed(12, 64, CV_8UC3, cv::Scalar(1, 2, 3));
    cv::repeat(tile, 1, 8, wide);
    cv::Mat roi = framed(cv::Rect(32, 4, 32, 4));
    wide.copyTo(roi);
    cv::Mat expected = wide.clone();
    apply_hsv_with_opencv(expected, hsv_tables(c.gains));
    apply_hsv(wide, c.gains);
    apply_hsv(roi, c.gains);
    INFO("gains (" << c.gains.h << ", " << c.gains.s << ", " << c.gains.v << ")");
    CHECK(cv::countNonZero(cv::Mat(wide != expected).reshape(1)) == 0);
    CHECK(cv::countNonZero(cv::Mat(roi != expected).reshape(1)) == 0);
    CHECK(framed.at<cv::Vec3b>(4, 31) == cv::Vec3b(1, 2, 3));  // nothing outside the region
    CHECK(framed.at<cv::Vec3b>(8, 32) == cv::Vec3b(1, 2, 3));
  }
}

TEST_CASE("apply_hsv on real COCO images at 640 px equals OpenCV's conversions", "[unit][data]") {
  // What training sees: coco-mini photos resized to a 640 px long side and letterboxed to
  // 640 x 640 (grey borders included), then the gains the default augment.hsv_* draw.
  // Tolerance: 0 levels.
  const auto root = test::shared_data_or_skip("coco-mini");
  if (!root) return;
  Rng rng(21);
  int images = 0;
  for (const char* name : {"000000000139.jpg", "000000000790.jpg", "000000000802.jpg"}) {
    const DecodedImage d = load_image(*root + "/images/" + name, 640, false);
    REQUIRE(d.ok());
    cv::Mat square(640, 640, CV_8UC3, cv::Scalar::all(114));
    d.bgr.copyTo(square(cv::Rect(0, 0, d.bgr.cols, d.bgr.rows)));
    for (int draw = 0; draw < 4; ++draw) {
      const HsvGains g = draw_hsv(rng, 0.015, 0.7, 0.4);
      cv::Mat expected = square.clone(), fused = square.clone();
      apply_hsv_with_opencv(expected, hsv_tables(g));
      apply_hsv(fused, g);
      INFO(name << " gains (" << g.h << ", " << g.s << ", " << g.v << ")");
      CHECK(cv::countNonZero(cv::Mat(expected != fused).reshape(1)) == 0);
    }
    ++images;
  }
  CHECK(images == 3);
}
