// Plots: the Gaussian smoothing against scipy's documented values, results.png layout, batch
// mosaics drawing boxes, keypoints and skeletons at the right pixels, and chart text that
// reads at 160 px wide.
#include <cmath>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "eval/coco_eval.h"
#include "eval/coco_synth.h"
#include "report/plot_text.h"
#include "report/plots.h"
#include "report/plots_charts.h"
#include "report/val_plots.h"
#include "test_support.h"
#include "train/epoch_record.h"

// After the project headers: LibTorch's c10 logging defines a CHECK of its own (an abort).
#include <catch2/catch.hpp>

using namespace detrain;
using namespace detrain::train;
using namespace detrain::model;
using namespace detrain::report;
using detrain::test::TempDir;

namespace {

bool pixel_is(const cv::Mat& img, int x, int y, const cv::Scalar& colour) {
  const auto p = img.at<cv::Vec3b>(y, x);
  return p[0] == colour[0] && p[1] == colour[1] && p[2] == colour[2];
}

PlotImage grey_image(int w, int h) {
  PlotImage p;
  p.image = cv::Mat(h, w, CV_8UC3, cv::Scalar(128, 128, 128));
  return p;
}

}  // namespace

TEST_CASE("gaussian smoothing matches scipy gaussian_filter1d", "[unit][train]") {
  // scipy.ndimage.gaussian_filter1d documentation example, printed to 8 decimals.
  const auto s1 = gaussian_smooth({1, 2, 3, 4, 5}, 1.0);
  const std::vector<double> e1 = {1.42704095, 2.06782203, 3.0, 3.93217797, 4.57295905};
  // sigma 4 on 5 values: the window (radius 16) reflects several times.
  const auto s4 = gaussian_smooth({1, 2, 3, 4, 5}, 4.0);
  const std::vector<double> e4 = {2.91948343, 2.95023502, 3.0, 3.04976498, 3.08051657};
  for (size_t i = 0; i < 5; ++i) {
    CHECK(s1[i] == Approx(e1[i]).margin(1e-8));  // the documented values carry 8 decimals
    CHECK(s4[i] == Approx(e4[i]).margin(1e-8));
  }
  CHECK(gaussian_smooth({}, 3.0).empty());
  const auto flat = gaussian_smooth(std::vector<double>(7, 2.5), 3.0);
  // A constant stays constant; 1e-12 relative: 25 weights summed in double.
  for (double v : flat) CHECK(v == Approx(2.5).epsilon(1e-12));
}

TEST_CASE("results plot groups train and val, P and R, mAPs and lr groups in panels",
          "[unit][train]") {
  ResultsTable table;
  // box, cls, dfl (train and val), P and R, mAP50 and mAP50-95, 3 lr groups: 6 panels.
  table.columns = results_columns({"box", "cls", "dfl"}, false, 3);
  for (int e = 1; e <= 12; ++e) {
    std::vector<double> row = {double(e), 10.0 * e};
    for (size_t c = 2; c < table.columns.size(); ++c) row.push_back(1.0 / (e + c));
    table.rows.push_back(row);
  }
  table.rows[3][5] = std::nan("");  // a missing metric is skipped, not drawn at 0
  const cv::Mat img = draw_results(table);
  CHECK(img.cols == 3 * 360);  // 3 panels a row, 2 rows
  CHECK(img.rows == 2 * 320);
  // The first series of a panel (train, P, mAP50) in C0 blue, the second (val, R, mAP50-95)
  // in C1 orange: markers and trend lines of both in every panel but lr's.
  size_t first = 0, second = 0;
  for (int y = 0; y < img.rows; ++y)
    for (int x = 0; x < img.cols; ++x) {
      first += pixel_is(img, x, y, cv::Scalar(180, 119, 31));
      second += pixel_is(img, x, y, cv::Scalar(14, 127, 255));
    }
  CHECK(first > 6 * 12 * 20);  // at least the 12 filled markers of every panel
  CHECK(second > 4 * 12 * 20);

  TempDir dir;
  save_results_png(table, dir.file("results.png"));
  const cv::Mat read = cv::imread(dir.file("results.png"));
  CHECK(read.cols == img.cols);
  ResultsTable empty;
  empty.columns = table.columns;
  save_results_png(empty, dir.file("none.png"));
  CHECK_FALSE(std::filesystem::exists(dir.file("none.png")));

  // Pose: 5 losses, P/R and mAP for boxes and for keypoints, lr: 10 panels in 4 rows.
  ResultsTable pose;
  pose.columns = results_columns({"box", "pose", "kobj", "cls", "dfl"}, true, 3);
  for (int e = 1; e <= 3; ++e) pose.rows.push_back(std::vector<double>(pose.columns.size(), e));
  CHECK(draw_results(pose).rows == 4 * 320);
}

TEST_CASE("batch mosaic draws boxes keypoints and skips weak predictions", "[unit][train]") {
  MosaicStyle style;
  style.names = {"a", "b", "c"};
  style.kpt_count = 2;
  style.skeleton = {{0, 1}};

  PlotImage gt = grey_image(100, 80);
  gt.boxes_xyxy = {{10, 10, 50, 40}};
  gt.classes = {2};
  gt.keypoints = {70, 60, 2, 80, 20, 0};  // second keypoint unlabelled

  PlotImage pred = grey_image(100, 80);
  pred.boxes_xyxy = {{10, 10, 50, 40}, {60, 50, 90, 70}};
  pred.classes = {1, 0};
  pred.scores = {0.9f, 0.1f};  // the second is below conf_thres
  pred.keypoints = {20, 30, 0.9f, 40, 30, 0.2f, 70, 60, 0.9f, 80, 60, 0.9f};

  const cv::Mat one = draw_batch_mosaic({gt}, style);
  CHECK(one.cols == 100);
  CHECK(one.rows == 80);
  CHECK(pixel_is(one, 10, 25, class_colour(2)));            // left edge of the box
  CHECK(pixel_is(one, 50, 25, class_colour(2)));            // right edge
  CHECK(pixel_is(one, 30, 25, cv::Scalar(128, 128, 128)));  // inside stays untouched
  CHECK(pixel_is(one, 70, 60, class_colour(0)));  // keypoint 0 (not 17 keypoints: the palette)
  CHECK(pixel_is(one, 80, 20, cv::Scalar(128, 128, 128)));  // v = 0: not drawn

  const cv::Mat two = draw_batch_mosaic({gt, pred}, style);
  CHECK(two.cols == 200);  // a 2 x 2 grid, filled column by column: pred under gt
  CHECK(two.rows == 160);
  CHECK(pixel_is(two, 10, 80 + 25, class_colour(1)));
  CHECK(pixel_is(two, 60, 80 + 60, cv::Scalar(128, 128, 128)));  // weak box not drawn
  CHECK(pixel_is(two, 40, 80 + 30, cv::Scalar(128, 128, 128)));  // keypoint score 0.2 < 0.25
  CHECK(pixel_is(two, 150, 120, cv::Scalar(255, 255, 255)));     // unused tiles stay white

  // Too large: scaled so the longer side fits max_size.
  style.max_size = 150;
  const cv::Mat scaled = draw_batch_mosaic({gt, gt, gt, gt}, style);
  CHECK(scaled.cols == 150);  // 2 x 2 tiles of 75 x 60
  CHECK(scaled.rows == 120);

  TempDir dir;
  save_batch_mosaic({gt, pred}, style, dir.file("train_batch0.jpg"));
  CHECK(cv::imread(dir.file("train_batch0.jpg")).cols == 150);
}

TEST_CASE("results plot has one lr panel and no panel for an all-zero loss", "[unit][train]") {
  ResultsTable table;
  table.columns = results_columns({"box", "cls", "dfl"}, false, 8);  // 10 + 8 lr columns
  for (int e = 1; e <= 4; ++e) {
    std::vector<double> row = {double(e), 10.0 * e};
    for (size_t c = 2; c < table.columns.size(); ++c) row.push_back(1.0 / (e + c));
    table.rows.push_back(row);
  }
  for (const char* zero : {"train/dfl_loss", "val/dfl_loss"}) {
    const size_t c = static_cast<size_t>(table.column(zero));
    for (auto& row : table.rows) row[c] = 0.0;
  }
  const cv::Mat img = draw_results(table);
  // box, cls, P/R, mAP and lr: 5 panels, 3 a row, 2 rows; the width stays 3 panels.
  CHECK(img.cols == 3 * 360);
  CHECK(img.rows == 2 * 320);
}

TEST_CASE("trend smoothing follows a straight line to its ends", "[unit][train]") {
  const std::vector<double> line = {1, 2, 3, 4, 5, 6, 7, 8};
  const auto smooth = trend_smooth(line, 3.0);
  for (size_t i = 0; i < line.size(); ++i) CHECK(smooth[i] == Approx(line[i]).margin(1e-9));
  // The plain Gaussian filter flattens the ends of the same line (what results.png no longer
  // draws).
  CHECK(gaussian_smooth(line, 3.0).back() < 7.0);
  const auto noisy = trend_smooth({0, 1, 0, 1, 0, 1, 0, 1, 0}, 2.0);
  for (double v : noisy) CHECK((v > 0.2 && v < 0.8));
}

TEST_CASE("greedy matching takes the best pairs first and each side once", "[unit][train]") {
  // truth 0 overlaps det 0 (0.9) and det 1 (0.6); truth 1 overlaps det 1 (0.7).
  const std::vector<std::vector<double>> sim = {{0.9, 0.6, 0.0}, {0.0, 0.7, 0.1}};
  CHECK(match_greedy(sim, 0.5) == std::vector<int>({0, 1, -1}));
  CHECK(match_greedy(sim, 0.8) == std::vector<int>({0, -1, -1}));
  CHECK(match_greedy({}, 0.5).empty());
}

TEST_CASE("class curves give a perfect class AP 0.995 and a missed one 0.005", "[unit][train]") {
  // Class 0: 2 truths, found by the two highest scores; class 1: 1 truth, only a false hit.
  const ClassCurves c = class_curves({0.9, 0.8, 0.3}, {0, 0, 1}, {true, true, false}, {2, 1, 0});
  REQUIRE(c.classes == std::vector<int>({0, 1}));  // class 2 has no truth: no row
  // 101-point interpolation over the envelope ending at (1, 0): 0.995 for a perfect class, as
  // the reference reports.
  CHECK(c.ap50[0] == Approx(0.995).margin(1e-6));
  CHECK(c.ap50[1] == Approx(0.005).margin(1e-6));
  // Recall of class 0 is 1 below confidence 0.8 and 0 above 0.9; precision 1 throughout.
  CHECK(c.r[0][500] == Approx(1.0));
  CHECK(c.r[0][950] == Approx(0.0));
  CHECK(c.p[0][500] == Approx(1.0));
  CHECK(c.f1[0][500] == Approx(1.0).margin(1e-6));
}

TEST_CASE("confusion matrix and curve charts render legibly sized images", "[unit][train]") {
  std::vector<std::vector<double>> m = {{5, 1, 0}, {0, 3, 2}, {1, 0, 0}};
  const cv::Mat counts = draw_confusion_matrix(m, {"cat", "dog"}, false);
  CHECK(counts.cols >= 800);
  CHECK(counts.rows >= 800);
  // The darkest cell is the largest count (row 0, column 0), near the matrix's top-left.
  CurveChart chart{"Box F1-confidence",
                   "Confidence",
                   "F1",
                   {0.0, 0.5, 1.0},
                   {{0.2, 0.8, 0.1}},
                   {"cat"},
                   {0.2, 0.8, 0.1},
                   "all classes 0.80 at 0.500"};
  const cv::Mat curve = draw_curve_chart(chart);
  CHECK(curve.rows == 720);
  size_t blue = 0;
  for (int y = 0; y < curve.rows; ++y)
    for (int x = 0; x < curve.cols; ++x) blue += pixel_is(curve, x, y, cv::Scalar(255, 0, 0));
  CHECK(blue > 500);  // the thick mean line
}

namespace {

// Height in pixels of the first band of dark rows from the top (the title), shown at 160 px.
double title_height_at_160(const cv::Mat& img) {
  cv::Mat grey;
  cv::cvtColor(img, grey, cv::COLOR_BGR2GRAY);
  int first = -1, last = -1;
  for (int y = 0; y < grey.rows; ++y) {
    double darkest = 255;
    cv::minMaxLoc(grey.row(y), &darkest);
    if (darkest < 100) {
      if (first < 0) first = y;
      last = y;
    } else if (first >= 0) {
      break;
    }
  }
  return first < 0 ? 0.0 : (last - first + 1) * 160.0 / img.cols;
}

}  // namespace

TEST_CASE("chart text is sized to read at 160 px wide", "[unit][train]") {
  // The font helper: digits of the asked height once the picture is 160 px wide.
  for (int width : {900, 1080, 1200}) {
    const double scale = legible_scale(width, kTickPx160);
    CHECK(text_extent("0", scale).height * 160.0 / width == Approx(kTickPx160).epsilon(0.15));
  }
  // Every chart's title, measured in the drawn pixels: at least 6 px tall at 160 px wide
  // (capitals and digits 6.5 px, "p" and "(" reach lower).
  ResultsTable table;
  table.columns = results_columns({"box", "cls", "dfl"}, false, 3);
  for (int e = 1; e <= 5; ++e) table.rows.push_back(std::vector<double>(table.columns.size(), e));
  CurveChart chart{"Box precision-recall", "Recall", "Precision",     {0.0, 0.5, 1.0},
                   {{1.0, 0.8, 0.1}},      {"cat"},  {1.0, 0.8, 0.1}, "all classes 0.512 mAP@0.5"};
  std::vector<std::vector<double>> m(6, std::vector<double>(6, 1.0));
  data::ImageRecord r;
  r.width = r.height = 100;
  r.boxes_xyxy_px = {{10, 10, 50, 60}};
  r.classes = {0};
  const std::vector<std::pair<std::string, cv::Mat>> charts{
      {"results.png", draw_results(table)},
      {"BoxPR_curve.png", draw_curve_chart(chart)},
      {"confusion_matrix.png",
       draw_confusion_matrix(m, {"person", "rectangle", "ellipse", "triangle", "cross"}, false)},
      {"labels.jpg", draw_labels_plot({r}, {"person"})}};
  for (const auto& [name, img] : charts) {
    INFO(name);
    CHECK(title_height_at_160(img) >= 6.0);
    CHECK(title_height_at_160(img) <= 12.0);  // a title, not the plot
  }
}

TEST_CASE("the PR chart is COCO's: its legends are the AP50 results.csv and eval print",
          "[unit][train]") {
  eval::SynthGtOptions g;
  g.images = 60;
  g.categories = 5;
  const eval::CocoGroundTruth gt = eval::synth_ground_truth(g);
  const eval::CocoEvalResult r = eval::evaluate_coco(
      gt, eval::synth_detections(gt, {}), eval::CocoParams::defaults(eval::IouType::kBbox));
  const CurveChart c =
      coco_pr_chart(r, "Box precision-recall", [](int64_t id) { return "c" + std::to_string(id); });
  REQUIRE(c.xs.size() == 101);
  REQUIRE(c.lines.size() == 5);
  // The mean line's mean over COCO's 101 recall points is stats[1] (AP50, results.csv's
  // mAP50(B)), up to summation order.
  double area = 0;
  for (double p : c.mean) area += p / c.mean.size();
  CHECK(area == Approx(r.stats[1]).margin(1e-12));
  char expected[64];
  std::snprintf(expected, sizeof expected, "all classes %.3f AP50 (COCO)", r.stats[1]);
  CHECK(c.mean_label == expected);
  // Each class's legend is detrain eval --per-class's AP50 of that category.
  for (int k = 0; k < r.num_categories; ++k) {
    std::snprintf(expected, sizeof expected, "c%lld %.3f",
                  static_cast<long long>(r.category_ids[static_cast<size_t>(k)]),
                  r.category_ap(k, 0.5));
    CHECK(c.line_names[static_cast<size_t>(k)] == expected);
  }
}

TEST_CASE("labels.jpg: the tallest bar reads off the axis and large classes are named",
          "[unit][train]") {
  // 80 classes, class 0 far the largest (167, as person in coco-mini), 12 the next (45).
  std::vector<std::string> names;
  for (int c = 0; c < 80; ++c) names.push_back(c == 0 ? "person" : "class" + std::to_string(c));
  std::vector<data::ImageRecord> records(1);
  records[0].width = records[0].height = 640;
  auto add = [&](int cls, int n) {
    for (int i = 0; i < n; ++i) {
      records[0].boxes_xyxy_px.push_back({10.0f, 10.0f, 60.0f, 90.0f});
      records[0].classes.push_back(cls);
    }
  };
  add(0, 167);
  add(12, 45);
  add(40, 3);
  const cv::Mat img = draw_labels_plot(records, names);
  // The bar of class 0 is a filled column in its colour, several pixels wide (it used to hide
  // under the y axis), and as tall as 167 / 200 of the axis whose top tick is 200.
  int widest = 0, tallest = 0;
  for (int y = 0; y < img.rows / 2; ++y) {
    int run = 0;
    for (int x = 0; x < img.cols / 2; ++x) {
      run = pixel_is(img, x, y, class_colour(0)) ? run + 1 : 0;
      widest = std::max(widest, run);
    }
  }
  for (int x = 0; x < img.cols / 2; ++x) {
    int run = 0;
    for (int y = 0; y < img.rows / 2; ++y) {
      run = pixel_is(img, x, y, class_colour(0)) ? run + 1 : 0;
      tallest = std::max(tallest, run);
    }
  }
  CHECK(widest >= 3);
  CHECK(tallest > 150);
  // Names for the largest bars that fit side by side, the largest first.
  const std::vector<int64_t> counts = [&] {
    std::vector<int64_t> c(80, 0);
    c[0] = 167, c[1] = 44, c[12] = 45, c[40] = 3;
    return c;
  }();
  const std::vector<int> named = named_bars(counts, 4.6, 12);
  CHECK(std::find(named.begin(), named.end(), 0) != named.end());
  CHECK(std::find(named.begin(), named.end(), 12) != named.end());
  CHECK(std::find(named.begin(), named.end(), 1) == named.end());   // too close to class 0
  CHECK(std::find(named.begin(), named.end(), 40) == named.end());  // under a tenth of 167
  CHECK(std::find(named.begin(), named.end(), 5) == named.end());   // no instances, no name
  CHECK(std::is_sorted(named.begin(), named.end()));
}
