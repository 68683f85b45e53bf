// warp_scaled against cv::warpAffine(INTER_LINEAR) itself: random scale-and-translate matrices
// (down- and up-scaling, output reaching past every edge), random sizes, both borders, and ROI
// outputs; every byte must be equal, since the mosaic and the letterbox path rely on it. Each
// implementation of the column pass is forced in turn; one this CPU cannot run is skipped with
// a warning that says so.
#include <catch2/catch.hpp>
#include <opencv2/imgproc.hpp>
#include <sstream>
#include <vector>

#include "common/rng.h"
#include "data/scale_warp.h"

using namespace detrain;
using namespace detrain::data;

namespace {

// A BGR image with every value in use: noise plus gradients (so edges and flat parts both occur).
cv::Mat test_image(Rng& rng, int w, int h) {
  cv::Mat img(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      img.at<cv::Vec3b>(y, x) = {static_cast<uint8_t>(rng.below(256)),
                                 static_cast<uint8_t>((x * 7) & 255),
                                 static_cast<uint8_t>((y * 5 + x) & 255)};
  return img;
}

// Where and how much two images differ: count and the first few positions.
std::string first_differences(const cv::Mat& ours, const cv::Mat& ref) {
  std::ostringstream out;
  int count = 0;
  for (int y = 0; y < ref.rows; ++y)
    for (int x = 0; x < ref.cols; ++x)
      for (int c = 0; c < 3; ++c) {
        const int a = ours.at<cv::Vec3b>(y, x)[c], b = ref.at<cv::Vec3b>(y, x)[c];
        if (a == b) continue;
        if (count++ < 5) out << " (" << y << "," << x << "," << c << ") " << a << " vs " << b;
      }
  return std::to_string(count) + " differing values:" + out.str();
}

const char* name(WarpColumns columns) {
  return columns == WarpColumns::avx512 ? "avx512"
         : columns == WarpColumns::avx2 ? "avx2"
                                        : "portable";
}

// The column passes this CPU runs; a warning names each one it cannot.
std::vector<WarpColumns> runnable_columns() {
  std::vector<WarpColumns> out;
  for (const WarpColumns c : {WarpColumns::avx512, WarpColumns::avx2, WarpColumns::portable}) {
    if (warp_columns_available(c))
      out.push_back(c);
    else
      WARN("warp_scaled column pass " << name(c) << " skipped: this CPU lacks its instructions");
  }
  return out;
}

}  // namespace

TEST_CASE("warp_scaled writes exactly what cv::warpAffine writes", "[unit][data][scale_warp]") {
  for (const WarpColumns columns : runnable_columns()) {
    INFO("column pass " << name(columns));
    Rng rng(7, {1});
    const cv::Mat source = test_image(rng, 331, 257);
    for (const bool replicate : {true, false}) {
      int differing_cases = 0;
      std::string first_report;
      for (int trial = 0; trial < 300; ++trial) {
        const cv::Rect crop(static_cast<int>(rng.below(60)), static_cast<int>(rng.below(60)),
                            1 + static_cast<int>(rng.below(270)),
                            1 + static_cast<int>(rng.below(196)));
        const cv::Mat src = source(crop);
        const double sx = rng.uniform(0.2, 2.0), sy = rng.uniform(0.2, 2.0);
        const cv::Matx23d m(sx, 0, rng.uniform(-200, 200), 0, sy, rng.uniform(-200, 200));
        const cv::Size size(1 + static_cast<int>(rng.below(300)),
                            1 + static_cast<int>(rng.below(300)));
        cv::Mat ref(size, CV_8UC3), ours(size, CV_8UC3);
        cv::warpAffine(src, ref, m, size, cv::INTER_LINEAR,
                       replicate ? cv::BORDER_REPLICATE : cv::BORDER_CONSTANT,
                       cv::Scalar::all(114));
        warp_scaled(src, ours, m, {replicate, 114}, columns);
        if (cv::norm(ours, ref, cv::NORM_INF) != 0 && differing_cases++ == 0) {
          std::ostringstream what;
          what << "replicate " << replicate << " m " << m << " out " << size << " src "
               << src.size() << ": " << first_differences(ours, ref);
          first_report = what.str();
        }
      }
      INFO(first_report);
      CHECK(differing_cases == 0);
    }
  }
}

TEST_CASE("warp_scaled fills an ROI in place and leaves the rest alone",
          "[unit][data][scale_warp]") {
  for (const WarpColumns columns : runnable_columns()) {
    INFO("column pass " << name(columns));
    Rng rng(8, {2});
    const cv::Mat src = test_image(rng, 120, 90);
    cv::Mat canvas(100, 100, CV_8UC3, cv::Scalar::all(9)), ref_canvas = canvas.clone();
    const cv::Rect roi(10, 20, 50, 40);
    const cv::Matx23d m(0.6, 0, -3.25, 0, 0.45, 1.5);
    cv::Mat ours = canvas(roi), ref = ref_canvas(roi);
    warp_scaled(src, ours, m, {true, 114}, columns);
    cv::warpAffine(src, ref, m, roi.size(), cv::INTER_LINEAR, cv::BORDER_REPLICATE);
    INFO(first_differences(canvas, ref_canvas));
    CHECK(cv::norm(canvas, ref_canvas, cv::NORM_INF) == 0);
    CHECK(ours.data == canvas.data + canvas.step[0] * 20 + 3 * 10);  // not reallocated
  }
}

TEST_CASE("is_scale_translate accepts only positive axis-aligned scales",
          "[unit][data][scale_warp]") {
  CHECK(is_scale_translate(cv::Matx23d(1.5, 0, 3, 0, 0.5, -2)));
  CHECK_FALSE(is_scale_translate(cv::Matx23d(1, 0.1, 0, 0, 1, 0)));  // shear
  CHECK_FALSE(is_scale_translate(cv::Matx23d(1, 0, 0, -0.1, 1, 0)));
  CHECK_FALSE(is_scale_translate(cv::Matx23d(-1, 0, 0, 0, 1, 0)));  // mirrored
  CHECK_FALSE(is_scale_translate(cv::Matx23d(1, 0, 0, 0, 0, 0)));   // degenerate
}
