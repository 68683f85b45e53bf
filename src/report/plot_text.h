// Text on the OpenCV charts (results.png, curves, confusion matrices, labels.jpg) sized to read
// when the picture is shown 160 px wide, as thumbnails and README images are: a font scale is
// chosen from the height that its digits must have at that width, so text stays in proportion
// to the image whatever its pixel size (at 640 px it is four times as tall).
#pragma once

#include <opencv2/core.hpp>
#include <string>

namespace detrain::report {

// Digit heights at 160 px width: titles, axis names and legends, tick labels. 4.5 px is about
// the least that a digit can be read at (a 5x7 pixel font's cap is 7 px).
constexpr double kTitlePx160 = 6.5, kLabelPx160 = 5.0, kTickPx160 = 4.5;

// The Hershey-simplex scale whose digits are `px_at_160` pixels tall when an image
// `image_width` pixels wide is shown 160 px wide.
double legible_scale(int image_width, double px_at_160);

// `scale`, or less so that `s` is at most `max_width` pixels wide.
double fit_scale(const std::string& s, double scale, int max_width);

// The thickness that keeps a stroke of `scale` visible when shrunk (1 at small sizes).
int stroke_for(double scale);

// Anti-aliased text with its baseline's left end at `at`; the thickness from stroke_for.
void draw_text(cv::Mat& img, const std::string& s, cv::Point at, double scale,
               const cv::Scalar& colour, int thickness = 0);
// The size of draw_text's text (height: cap height, without the baseline's descent).
cv::Size text_extent(const std::string& s, double scale, int thickness = 0);
// Text turned 90 degrees counter-clockwise (read bottom to top, like matplotlib's rotated
// labels), dark over a light background, the start of the text at `bottom_left`.
void draw_vertical_text(cv::Mat& img, const std::string& s, cv::Point bottom_left, double scale,
                        const cv::Scalar& colour, int thickness = 0);

}  // namespace detrain::report
