// Drawings as an Ultralytics user knows them (Ultralytics 8.4.190 ultralytics/utils/plotting.py
// is the source of every literal colour here): the class palette and its distinct neighbours,
// keypoints and limbs in the pose palette with the conf 0.25 rule, the COCO skeleton for 17
// keypoints, plot_images' column-by-column grid shared by a validation batch's labels and
// predictions, and predict drawings without a file-name stamp.
#include <cmath>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "report/batch_plots.h"
#include "report/plots.h"
#include "report/plots_annotate.h"
#include "test_support.h"

// After the project headers: LibTorch's c10 logging defines a CHECK of its own (an abort).
#include <catch2/catch.hpp>

using namespace detrain;
using namespace detrain::report;
using detrain::test::TempDir;

namespace {

const cv::Scalar kGrey(128, 128, 128);

cv::Scalar pixel(const cv::Mat& img, int x, int y) {
  const auto p = img.at<cv::Vec3b>(y, x);
  return cv::Scalar(p[0], p[1], p[2]);
}

// CIELAB of a BGR colour (L 0-100), as OpenCV converts float sRGB.
cv::Vec3f lab_of(const cv::Scalar& bgr) {
  cv::Mat one(1, 1, CV_32FC3, cv::Scalar(bgr[0] / 255.0, bgr[1] / 255.0, bgr[2] / 255.0)), lab;
  cv::cvtColor(one, lab, cv::COLOR_BGR2Lab);
  return lab.at<cv::Vec3f>(0, 0);
}

// Consecutive class colours must tell apart at a glance: CIE76 distance at least 40 (about 17
// just-noticeable differences), and when both are colourful (chroma 20 or more) hue angles at
// least 20 degrees apart, so that a light and a dark shade of one hue (red and salmon) fail.
bool distinct(const cv::Scalar& a, const cv::Scalar& b, std::string* why) {
  const cv::Vec3f p = lab_of(a), q = lab_of(b);
  const double de = cv::norm(p - q);
  const double ca = std::hypot(p[1], p[2]), cb = std::hypot(q[1], q[2]);
  double dh = std::abs(std::atan2(p[2], p[1]) - std::atan2(q[2], q[1])) * 180 / M_PI;
  dh = std::min(dh, 360 - dh);
  *why = "dE76 " + std::to_string(de) + ", hue apart " + std::to_string(dh) + " deg";
  return de >= 40 && (ca < 20 || cb < 20 || dh >= 20);
}

cv::Scalar rgb(int r, int g, int b) { return cv::Scalar(b, g, r); }
cv::Scalar grey(int level) { return cv::Scalar(level, level, level); }

// A standing person's 17 COCO keypoints in a 640 x 480 picture (x, y), the layout the
// reference was run on to check these colours.
const float kPerson[17][2] = {{320, 60},  {310, 50},  {330, 50},  {300, 55},  {340, 55},
                              {280, 120}, {360, 120}, {260, 190}, {380, 190}, {250, 260},
                              {390, 260}, {295, 260}, {345, 260}, {290, 350}, {350, 350},
                              {285, 440}, {355, 440}};

// The person scaled by `s`, every keypoint at `score` except those in `hidden` (score 0.1).
std::vector<float> person(float s, float score, std::vector<int> hidden = {}) {
  std::vector<float> k;
  for (int i = 0; i < 17; ++i) {
    const bool off = std::find(hidden.begin(), hidden.end(), i) != hidden.end();
    k.insert(k.end(), {kPerson[i][0] * s, kPerson[i][1] * s, off ? 0.1f : score});
  }
  return k;
}

cv::Point mid(int a, int b, float s) {
  return {static_cast<int>((kPerson[a][0] + kPerson[b][0]) / 2 * s),
          static_cast<int>((kPerson[a][1] + kPerson[b][1]) / 2 * s)};
}

}  // namespace

TEST_CASE("class colours are the reference's palette with distinct neighbours",
          "[unit][report][plots]") {
  // Colors.hexs: 042AFF, 0BDBEB, F3F3F3, ..., A2FF0B (BGR here).
  CHECK(class_colour(0) == rgb(0x04, 0x2A, 0xFF));
  CHECK(class_colour(1) == rgb(0x0B, 0xDB, 0xEB));
  CHECK(class_colour(2) == rgb(0xF3, 0xF3, 0xF3));
  CHECK(class_colour(19) == rgb(0xA2, 0xFF, 0x0B));
  CHECK(class_colour(20) == class_colour(0));  // cycles every 20
  std::string why;
  for (int i = 0; i < 20; ++i) {
    const bool apart = distinct(class_colour(i), class_colour(i + 1), &why);
    INFO("classes " << i << " and " << i + 1 << ": " << why);
    CHECK(apart);
  }
  // The criterion bites: the palette detrain had before (YOLOv5's) began red, salmon.
  CHECK_FALSE(distinct(rgb(0xFF, 0x38, 0x38), rgb(0xFF, 0x9D, 0x97), &why));
  // Text over a label: dark navy on the light entries (Annotator.dark_colors), else white.
  CHECK(label_text_colour(1) == rgb(0x11, 0x1F, 0x68));
  CHECK(label_text_colour(0) == cv::Scalar(255, 255, 255));
}

TEST_CASE("keypoints take the reference's pose colours in mosaics and predict drawings",
          "[unit][report][plots]") {
  // Annotator.kpt_color: face pose_palette[16] (0, 255, 0), arms [0] (255, 128, 0), legs [9]
  // (51, 153, 255), RGB. A mosaic (an RGB picture in the reference) shows them as written; a
  // predict drawing gets the same numbers in BGR order (the reference draws them into its BGR
  // image): arms blue, legs orange there.
  for (int k = 0; k < 17; ++k) {
    INFO("keypoint " << k);
    const cv::Scalar mosaic = k <= 4    ? rgb(0, 255, 0)
                              : k <= 10 ? rgb(255, 128, 0)
                                        : rgb(51, 153, 255);
    const cv::Scalar predict = k <= 4    ? cv::Scalar(0, 255, 0)
                               : k <= 10 ? cv::Scalar(255, 128, 0)
                                         : cv::Scalar(51, 153, 255);
    CHECK(keypoint_colour(k, 17, PoseColours::kMosaic) == mosaic);
    CHECK(keypoint_colour(k, 17, PoseColours::kPredict) == predict);

    // Drawn alone (its limbs' other ends hidden), the dot's centre is that colour.
    PlotImage one;
    one.image = cv::Mat(480, 640, CV_8UC3, kGrey);
    one.boxes_xyxy = {{1, 1, 2, 2}};
    one.classes = {0};
    one.scores = {0.9f};
    std::vector<int> others;
    for (int j = 0; j < 17; ++j)
      if (j != k) others.push_back(j);
    one.keypoints = person(1, 0.9f, others);
    MosaicStyle style;
    style.kpt_count = 17;
    const cv::Point at(static_cast<int>(kPerson[k][0]), static_cast<int>(kPerson[k][1]));
    CHECK(pixel(draw_prediction(one, style), at.x, at.y) == predict);
    CHECK(pixel(draw_batch_mosaic({one}, style), at.x, at.y) == mosaic);
  }
  // Another layout: the class palette by keypoint index, as the reference colours it.
  CHECK(keypoint_colour(3, 5, PoseColours::kMosaic) == class_colour(3));
}

TEST_CASE("a limb joins two visible keypoints in its colour and never an invisible one",
          "[unit][report][plots]") {
  // 2000 x 1600: line width round(3603 / 2 * 0.003) = 5, limbs ceil(5 / 2) = 3 px wide, so a
  // limb's middle pixel is its colour exactly. The left wrist (9) scores 0.1 < 0.25.
  const float s = 2.5f;
  PlotImage item;
  item.image = cv::Mat(1600, 2000, CV_8UC3, kGrey);
  item.boxes_xyxy = {{1, 1, 3, 3}};
  item.classes = {0};
  item.scores = {0.9f};
  item.keypoints = person(s, 0.9f, {9});
  MosaicStyle style;
  style.kpt_count = 17;  // no skeleton given: COCO's
  const cv::Mat img = draw_prediction(item, style);
  // Annotator.limb_color: shoulders (5-6) pose_palette[0], hip to hip [7], knee to ankle [9],
  // eye to eye [16]; here in predict's BGR order.
  auto at = [&](cv::Point p) { return pixel(img, p.x, p.y); };
  CHECK(at(mid(5, 6, s)) == cv::Scalar(255, 128, 0));
  CHECK(at(mid(11, 12, s)) == cv::Scalar(255, 51, 255));
  CHECK(at(mid(13, 15, s)) == cv::Scalar(51, 153, 255));
  CHECK(at(mid(1, 2, s)) == cv::Scalar(0, 255, 0));
  CHECK(at(mid(8, 10, s)) == cv::Scalar(255, 128, 0));  // right elbow to right wrist: drawn
  CHECK(at(mid(7, 9, s)) == kGrey);                     // left elbow to the hidden wrist: not
  CHECK(at({static_cast<int>(kPerson[9][0] * s), static_cast<int>(kPerson[9][1] * s)}) == kGrey);

  // Ground truth in a mosaic: visibility 0 hides a keypoint and its limbs, 1 and 2 show. At
  // 3200 x 2400 in one tile, font size int(5600 * 0.01) = 56, lines round(5.6) = 6 px and limbs
  // 3 px wide.
  const float t = 5.0f;
  PlotImage truth;
  truth.image = cv::Mat(2400, 3200, CV_8UC3, kGrey);
  truth.boxes_xyxy = {{1, 1, 3, 3}};
  truth.classes = {0};
  truth.keypoints = person(t, 2.0f);
  truth.keypoints[9 * 3 + 2] = 0.0f;
  truth.keypoints[7 * 3 + 2] = 1.0f;  // occluded but labelled
  MosaicStyle full = style;
  full.max_size = 3200;  // one tile at full size: positions stay
  const cv::Mat mosaic = draw_batch_mosaic({truth}, full);
  auto m = [&](cv::Point p) { return pixel(mosaic, p.x, p.y); };
  CHECK(m(mid(5, 6, t)) == rgb(255, 128, 0));  // as written: orange arms
  CHECK(m(mid(5, 7, t)) == rgb(255, 128, 0));
  CHECK(m(mid(13, 15, t)) == rgb(51, 153, 255));  // blue legs
  CHECK(m(mid(7, 9, t)) == kGrey);

  // A data set's own skeleton replaces COCO's: only its limbs are drawn.
  style.skeleton = {{5, 6}};
  const cv::Mat own = draw_prediction(item, style);
  CHECK(pixel(own, mid(5, 6, s).x, mid(5, 6, s).y) == cv::Scalar(255, 128, 0));
  CHECK(pixel(own, mid(11, 12, s).x, mid(11, 12, s).y) == kGrey);

  // Five keypoints and no skeleton: loose points, as the reference draws other layouts; with a
  // skeleton, the limb in its first keypoint's colour.
  PlotImage five = item;
  five.keypoints.resize(5 * 3);
  for (int k = 0; k < 5; ++k) {
    five.keypoints[k * 3] = 400.0f + 300 * k;
    five.keypoints[k * 3 + 1] = 800;
  }
  MosaicStyle loose;
  loose.kpt_count = 5;
  CHECK(pixel(draw_prediction(five, loose), 550, 800) == kGrey);
  loose.skeleton = {{0, 1}};
  CHECK(pixel(draw_prediction(five, loose), 550, 800) ==
        keypoint_colour(0, 5, PoseColours::kPredict));
}

TEST_CASE("mosaics fill the reference's square grid column by column", "[unit][report][plots]") {
  const cv::Scalar colours[3] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}};
  std::vector<PlotImage> tiles(3);
  for (int i = 0; i < 3; ++i) tiles[i].image = cv::Mat(60, 100, CV_8UC3, colours[i]);
  const cv::Mat m = draw_batch_mosaic(tiles, MosaicStyle{});
  REQUIRE(m.cols == 200);  // ceil(sqrt(3)) = 2: a 2 x 2 grid, one tile left white
  REQUIRE(m.rows == 120);
  CHECK(pixel(m, 50, 30) == colours[0]);
  CHECK(pixel(m, 50, 90) == colours[1]);  // the second image under the first
  CHECK(pixel(m, 150, 30) == colours[2]);
  CHECK(pixel(m, 150, 90) == cv::Scalar(255, 255, 255));

  // Larger than max_size: each tile ceil(1920 / 4 / 640 * size), as plot_images scales.
  std::vector<PlotImage> big(16);
  for (auto& t : big) t.image = cv::Mat(480, 640, CV_8UC3, kGrey);
  const cv::Mat scaled = draw_batch_mosaic(big, MosaicStyle{});
  CHECK(scaled.cols == 4 * 480);
  CHECK(scaled.rows == 4 * 360);
}

TEST_CASE("a validation batch's labels and predictions share one grid", "[unit][report][plots]") {
  // 32 images (the validation batch size) of 64 x 80: both pictures show the first 16 in a
  // 4 x 4 grid, image i in the same tile.
  const int64_t b = 32;
  infer::ValBatch batch;
  batch.images = torch::zeros({b, 3, 64, 80}, torch::kUInt8);
  for (int64_t i = 0; i < b; ++i) batch.images[i].fill_(static_cast<int>(7 * i));
  std::vector<data::ImageRecord> records(static_cast<size_t>(b));
  std::vector<const data::ImageRecord*> record_of;
  std::vector<infer::ImageDetections> detections(static_cast<size_t>(b));
  std::vector<std::string> titles;
  for (int64_t i = 0; i < b; ++i) {
    geometry::ImageFrame f;
    f.image_id = i;
    batch.frames.push_back(f);
    records[i].file = "/x/" + std::to_string(i) + ".jpg";
    records[i].boxes_xyxy_px = {{10, 10, 40, 40}};
    records[i].classes = {0};
    record_of.push_back(&records[i]);
    detections[i].boxes_xyxy = torch::tensor({{10.f, 10.f, 40.f, 40.f}});
    detections[i].scores = torch::tensor({0.8f});
    detections[i].classes = torch::tensor({int64_t{0}});
    titles.push_back(std::to_string(i) + ".jpg");
  }
  data::DatasetInfo dataset;
  dataset.names = {"person"};
  TempDir dir;
  save_val_labels_plot(batch, record_of, dataset, dir.file("labels.png"));
  save_val_prediction_plot(batch, detections, dataset, titles, dir.file("pred.png"));
  const cv::Mat labels = cv::imread(dir.file("labels.png"));
  const cv::Mat pred = cv::imread(dir.file("pred.png"));
  REQUIRE(labels.size() == cv::Size(4 * 80, 4 * 64));
  REQUIRE(pred.size() == labels.size());
  // Image i in column i / 4, row i % 4 of both: its grey level at the tile's lower right.
  for (int i = 0; i < 16; ++i) {
    const int x = (i / 4) * 80 + 70, y = (i % 4) * 64 + 55;
    INFO("image " << i);
    CHECK(pixel(labels, x, y) == grey(7 * i));
    CHECK(pixel(pred, x, y) == grey(7 * i));
  }

  // train_batch*.jpg: the first 16 too (data preview asks for all of them).
  data::Batch train;
  train.images = batch.images;
  train.batch_idx = torch::zeros({0}, torch::kInt64);
  train.cls = torch::zeros({0}, torch::kInt64);
  train.boxes_xywhn = torch::zeros({0, 4});
  CHECK(draw_batch_targets(train, dataset, kMaxSubplots).size() == labels.size());
  CHECK(draw_batch_targets(train, dataset).size() == cv::Size(6 * 80, 6 * 64));
}

TEST_CASE("predict drawings carry no stamp", "[unit][report][plots]") {
  // A photo-like gradient with one detection at the top right: every pixel outside the box and
  // its label is the photo's (a file name used to be written in the lower left).
  cv::Mat photo(300, 400, CV_8UC3);
  for (int y = 0; y < photo.rows; ++y)
    for (int x = 0; x < photo.cols; ++x)
      photo.at<cv::Vec3b>(y, x) = cv::Vec3b(x % 256, y % 256, (x + y) % 256);
  const cv::Mat original = photo.clone();
  PlotImage item;
  item.image = photo;
  item.boxes_xyxy = {{300, 40, 390, 120}};
  item.classes = {0};
  item.scores = {0.87f};
  MosaicStyle style;
  style.names = {"person"};
  const cv::Mat drawn = draw_prediction(item, style);
  REQUIRE(drawn.size() == photo.size());
  cv::Mat diff;
  cv::absdiff(drawn, photo, diff);
  const cv::Rect lower_half(0, 150, 400, 150);
  CHECK(cv::countNonZero(diff(lower_half).reshape(1)) == 0);
  CHECK(cv::countNonZero(diff.reshape(1)) > 0);  // the box is there
  CHECK(pixel(drawn, 345, 120) == class_colour(0));
  // The input stays untouched.
  const cv::Mat changed = photo != original;
  CHECK(cv::countNonZero(changed.reshape(1)) == 0);
}
