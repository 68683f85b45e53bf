// The fused HSV kernels (data/hsv_avx512.cpp, data/hsv_avx2.cpp) against OpenCV's own two
// conversions with the reference's tables (apply_hsv_with_opencv), each kernel forced in turn.
// Tolerance everywhere: 0 levels, since the kernels reproduce OpenCV's arithmetic and any
// difference is a bug. OpenCV rounds a pixel differently by its column (hsv_kernels.h): rows 4096
// wide put every pixel in its vector kernel, rows 31 wide every pixel in its scalar code, and
// widths 1-70 put vector blocks and remainders in every position of the kernels' own steps
// (64 and 8 pixels). A kernel this CPU cannot run is skipped with a warning that says so.
#include <catch2/catch.hpp>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "common/rng.h"
#include "data/hsv.h"
#include "data/hsv_kernels.h"

using namespace detrain;
using namespace detrain::data;

namespace {

const HsvKernel kKernels[] = {HsvKernel::avx512, HsvKernel::avx2};

// The kernels this CPU runs; a warning names each one it cannot.
std::vector<HsvKernel> runnable_kernels() {
  std::vector<HsvKernel> out;
  for (const HsvKernel k : kKernels) {
    if (hsv_kernel_available(k))
      out.push_back(k);
    else
      WARN("HSV kernel " << hsv_kernel_name(k)
                         << " skipped: this CPU lacks its instructions (avx512: AVX-512 F, BW and "
                            "VBMI; both: AVX2 and FMA, where OpenCV runs its AVX2 kernels)");
  }
  return out;
}

// Every BGR colour once, row after row, in an image `width` wide (the last row padded with 0).
cv::Mat all_colours(int width) {
  const int rows = ((1 << 24) + width - 1) / width;
  cv::Mat all(rows, width, CV_8UC3, cv::Scalar::all(0));
  for (int i = 0; i < (1 << 24); ++i) {
    uint8_t* p = all.ptr<uint8_t>(i / width) + 3 * (i % width);
    p[0] = static_cast<uint8_t>(i & 255);
    p[1] = static_cast<uint8_t>((i >> 8) & 255);
    p[2] = static_cast<uint8_t>(i >> 16);
  }
  return all;
}

std::string describe(const HsvGains& g) {
  return "gains (" + std::to_string(g.h) + ", " + std::to_string(g.s) + ", " + std::to_string(g.v) +
         ")";
}

int differing_bytes(const cv::Mat& a, const cv::Mat& b) {
  return cv::countNonZero(cv::Mat(a != b).reshape(1));
}

// Each runnable kernel against OpenCV on `image` for each of `gains`.
void check_all_kernels(const cv::Mat& image, const std::vector<HsvGains>& gains) {
  const std::vector<HsvKernel> kernels = runnable_kernels();
  for (const auto& g : gains) {
    const HsvTables tables = hsv_tables(g);
    cv::Mat expected = image.clone();
    apply_hsv_with_opencv(expected, tables);
    for (const HsvKernel k : kernels) {
      INFO(hsv_kernel_name(k) << ", " << describe(g) << ", width " << image.cols);
      cv::Mat fused = image.clone();
      REQUIRE(apply_hsv_fused(fused, tables, k));
      CHECK(differing_bytes(expected, fused) == 0);
    }
  }
}

// hsv_reference.py's four gains, the default gains' extremes and tiny ones.
const std::vector<HsvGains> kGains = {
    {0.0123, -0.45, 0.31}, {-0.015, 0.7, -0.4}, {0.0, 0.0, 0.25},   {0.004, 0.66, 0.0},
    {0.015, -0.7, 0.4},    {-0.015, 0.7, 0.4},  {1e-9, 1e-9, -1e-9}};

}  // namespace

TEST_CASE("OpenCV's HSV reciprocal tables are the kernels' integer divisors", "[unit][data]") {
  // OpenCV fills them as saturate_cast<int>((255 << 12) / (1.0 * v)) and
  // saturate_cast<int>((180 << 12) / (6.0 * d)), 0 at index 0: a double division rounded half
  // to even (cvRound). The kernels use an integer half-up rounding; no entry is a tie.
  for (int i = 0; i < 256; ++i) {
    INFO("index " << i);
    CHECK(hsv_kernels::sat_divisor(i) == (i == 0 ? 0 : cvRound((255 << 12) / (1.0 * i))));
    CHECK(hsv_kernels::hue_divisor(i) == (i == 0 ? 0 : cvRound((180 << 12) / (6.0 * i))));
  }
}

TEST_CASE("each fused HSV kernel equals OpenCV on all 2^24 colours in its vector kernel",
          "[unit][data]") {
  check_all_kernels(all_colours(4096), kGains);  // 4096 = 128 blocks of 32: no remainder
}

TEST_CASE("each fused HSV kernel equals OpenCV on all 2^24 colours in its scalar remainder",
          "[unit][data]") {
  // 31 pixels wide: OpenCV's vector kernel takes no block of 32, so every pixel goes through
  // its scalar code (uncontracted v (1 - s (1 - f)), results rounded to nearest even).
  check_all_kernels(all_colours(31), {kGains[0], kGains[1], kGains[2], kGains[6]});
}

TEST_CASE("each fused HSV kernel equals OpenCV at widths 1 to 70, also inside a larger image",
          "[unit][data]") {
  // Random colours (seeded), about 2^15 pixels per width, as a whole image and as a region of
  // interest (rows not contiguous) framed by bytes that must stay as they were.
  Rng rng(44);
  const std::vector<HsvKernel> kernels = runnable_kernels();
  for (int width = 1; width <= 70; ++width) {
    const int rows = (1 << 15) / width + 1;
    cv::Mat image(rows, width, CV_8UC3);
    for (size_t i = 0; i < image.total() * 3; ++i)
      image.data[i] = static_cast<uint8_t>(rng.below(256));
    for (const HsvGains& g : {kGains[0], kGains[5]}) {
      const HsvTables tables = hsv_tables(g);
      cv::Mat expected = image.clone();
      apply_hsv_with_opencv(expected, tables);
      cv::Mat frame(rows + 2, width + 70, CV_8UC3, cv::Scalar(1, 2, 3));
      cv::Mat expected_frame = frame.clone();
      expected.copyTo(expected_frame(cv::Rect(1, 1, width, rows)));
      for (const HsvKernel k : kernels) {
        INFO(hsv_kernel_name(k) << ", " << describe(g) << ", width " << width);
        cv::Mat fused = image.clone();
        REQUIRE(apply_hsv_fused(fused, tables, k));
        CHECK(differing_bytes(expected, fused) == 0);
        cv::Mat framed = frame.clone();
        cv::Mat roi = framed(cv::Rect(1, 1, width, rows));
        image.copyTo(roi);
        REQUIRE(apply_hsv_fused(roi, tables, k));
        CHECK(differing_bytes(expected_frame, framed) == 0);
      }
    }
  }
}

TEST_CASE("apply_hsv_fused declines what it cannot reproduce and leaves it untouched",
          "[unit][data]") {
  const HsvTables tables = hsv_tables({0.01, 0.5, 0.3});
  HsvTables wrapped = tables;
  wrapped.hue[17] = 180;  // beyond OpenCV's hue range: no sector
  cv::Mat grey(4, 40, CV_8UC1, cv::Scalar(50)), colour(4, 40, CV_8UC3, cv::Scalar(10, 90, 200));
  for (const HsvKernel k : kKernels) {
    INFO(hsv_kernel_name(k));
    cv::Mat g = grey.clone(), c = colour.clone(), empty;
    CHECK_FALSE(apply_hsv_fused(g, tables, k));
    CHECK_FALSE(apply_hsv_fused(c, wrapped, k));
    CHECK_FALSE(apply_hsv_fused(empty, tables, k));
    CHECK(differing_bytes(g, grey) == 0);
    CHECK(differing_bytes(c, colour) == 0);
  }
}
