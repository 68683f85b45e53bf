// Charts drawn with OpenCV for the validation and label plots: curve charts (one line per
// class and a thick mean line, as the reference's matplotlib curves), confusion matrices and
// labels.jpg. Large fonts and thick mean lines, so each stays readable as a 160 px thumbnail.
#pragma once

#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "data/coco_records.h"

namespace detrain::report {

// matplotlib's default colour cycle (tab10: C0 blue, C1 orange, C2 green, ...), BGR, cycling
// every 10: the reference's per-class curves and results.png series take it.
cv::Scalar tab10_colour(int index);

struct CurveChart {
  std::string title, x_label, y_label;
  std::vector<double> xs;                  // shared x grid
  std::vector<std::vector<double>> lines;  // per class
  std::vector<std::string> line_names;     // legend per class (shown for fewer than 21)
  std::vector<double> mean;                // the thick line
  std::string mean_label;                  // "all classes 0.512 mAP@0.5"
};
cv::Mat draw_curve_chart(const CurveChart& chart);

// `matrix` [nc + 1 predicted][nc + 1 true], the last row/column the background. Normalised:
// each true column divided by its sum.
cv::Mat draw_confusion_matrix(const std::vector<std::vector<double>>& matrix,
                              const std::vector<std::string>& names, bool normalised);

// The bars of labels.jpg's instances panel that get their class name when not every name fits
// (more than 30 classes): those of at least a tenth of the largest count, the largest first,
// each kept when its name (`name_height` pixels across, drawn vertically) clears the names
// already kept; bars `bar_width` apart. Ascending class order.
std::vector<int> named_bars(const std::vector<int64_t>& counts, double bar_width, int name_height);

// The instances panel in `area` of `img`: a bar per class on a y axis with round ticks up to
// the first one at or above the largest count, names under the bars (every one up to 30
// classes, else named_bars'); `tick`/`title`: font scales.
void draw_instance_bars(cv::Mat& img, const cv::Rect& area, const std::vector<int64_t>& per_class,
                        const std::vector<std::string>& names, double tick, double title);

// labels.jpg: instances per class, box shapes overlaid at the centre, and the 2-D histograms
// of box centres (x, y) and sizes (width, height), normalised to the image.
cv::Mat draw_labels_plot(const std::vector<data::ImageRecord>& records,
                         const std::vector<std::string>& names);
void save_labels_plot(const std::vector<data::ImageRecord>& records,
                      const std::vector<std::string>& names, const std::string& path);

// PNG (by extension) or JPEG, atomically.
void save_chart(const cv::Mat& image, const std::string& path);

}  // namespace detrain::report
