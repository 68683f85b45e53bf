// See plot_text.h.
#include "report/plot_text.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

namespace detrain::report {

namespace {

constexpr auto kFont = cv::FONT_HERSHEY_SIMPLEX;

int thickness_or_default(int thickness, double scale) {
  return thickness > 0 ? thickness : stroke_for(scale);
}

}  // namespace

double legible_scale(int image_width, double px_at_160) {
  static const int digit_height = [] {  // of "0" at scale 1
    int baseline = 0;
    return cv::getTextSize("0", kFont, 1.0, 1, &baseline).height;
  }();
  const double wanted = px_at_160 * image_width / 160.0;
  return wanted / digit_height;
}

double fit_scale(const std::string& s, double scale, int max_width) {
  for (int i = 0; i < 40 && text_extent(s, scale).width > max_width; ++i) scale *= 0.95;
  return scale;
}

int stroke_for(double scale) { return std::max(1, static_cast<int>(std::lround(scale * 1.4))); }

void draw_text(cv::Mat& img, const std::string& s, cv::Point at, double scale,
               const cv::Scalar& colour, int thickness) {
  cv::putText(img, s, at, kFont, scale, colour, thickness_or_default(thickness, scale),
              cv::LINE_AA);
}

cv::Size text_extent(const std::string& s, double scale, int thickness) {
  int baseline = 0;
  return cv::getTextSize(s, kFont, scale, thickness_or_default(thickness, scale), &baseline);
}

void draw_vertical_text(cv::Mat& img, const std::string& s, cv::Point bottom_left, double scale,
                        const cv::Scalar& colour, int thickness) {
  const int t = thickness_or_default(thickness, scale);
  int descent = 0;  // below the baseline ("g", "p")
  const cv::Size size = cv::getTextSize(s, kFont, scale, t, &descent);
  const int pad = 2 + t;
  cv::Mat strip(size.height + descent + 2 * pad, size.width + 2 * pad, CV_8UC3,
                cv::Scalar(255, 255, 255));
  draw_text(strip, s, {pad, size.height + pad}, scale, colour, t);
  cv::Mat turned;
  cv::rotate(strip, turned, cv::ROTATE_90_COUNTERCLOCKWISE);
  const cv::Rect at(bottom_left.x, bottom_left.y - turned.rows, turned.cols, turned.rows);
  const cv::Rect clipped = at & cv::Rect(0, 0, img.cols, img.rows);
  if (clipped.area() == 0) return;
  cv::Mat roi = img(clipped);
  cv::Mat src = turned(cv::Rect(clipped.x - at.x, clipped.y - at.y, clipped.width, clipped.height));
  cv::min(roi, src, roi);  // dark text over the light background
}

}  // namespace detrain::report
