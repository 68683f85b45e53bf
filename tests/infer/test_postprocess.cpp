// Postprocess on hand-made boxes whose IoUs are computed by hand: greedy suppression,
// class-awareness, multi-label rows, max_det and max_nms cuts, the end-to-end filter, the
// letterbox inverse on known numbers, COCO records and predictions.json.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "eval/predictions_json.h"
#include "infer/postprocess.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::eval;
using namespace detrain::infer;
using detrain::geometry::ImageFrame;

namespace {

// Boxes A..D; IoU(A, B) = 90/100 = 0.9, IoU(A, C) = 50/150 = 0.333, IoU(A, D) = 81/119 = 0.681,
// IoU(C, D) = 54/146 = 0.370, IoU(B, D) = 72/(90+100-72) = 0.610, IoU(B, C) = 45/145 = 0.310.
torch::Tensor four_boxes() {
  return torch::tensor({0.f, 0.f, 10.f, 10.f,   // A
                        0.f, 0.f, 10.f, 9.f,    // B
                        5.f, 0.f, 15.f, 10.f,   // C
                        1.f, 1.f, 11.f, 11.f})  // D
      .reshape({4, 4});
}

// decoded [1, 4 + 2 + 3, 5]: per anchor cx, cy, w, h, two class scores, one keypoint.
torch::Tensor decoded_five_anchors() {
  const float rows[5][9] = {
      {5, 5, 10, 10, 0.9f, 0.0005f, 0, 1, 0.5f},          // a0: box A
      {5, 4.5f, 10, 9, 0.8f, 0.6f, 10, 11, 0.5f},         // a1: box B, both classes
      {10, 5, 10, 10, 0.0001f, 0.0002f, 20, 21, 0.5f},    // a2: no class above conf
      {6, 6, 10, 10, 0.7f, 0.001f, 30, 31, 0.5f},         // a3: box D; fp32 0.001 is not above conf
      {100, 100, 20, 20, 0.0005f, 0.95f, 40, 41, 0.5f}};  // a4: far away
  torch::Tensor t = torch::empty({5, 9});
  for (int a = 0; a < 5; ++a)
    for (int c = 0; c < 9; ++c) t[a][c] = rows[a][c];
  return t.t().unsqueeze(0).contiguous();  // [1, 9, 5]
}

std::vector<float> scores_of(const ImageDetections& d) {
  return std::vector<float>(d.scores.data_ptr<float>(), d.scores.data_ptr<float>() + d.size());
}
std::vector<int64_t> classes_of(const ImageDetections& d) {
  return std::vector<int64_t>(d.classes.data_ptr<int64_t>(),
                              d.classes.data_ptr<int64_t>() + d.size());
}

}  // namespace

TEST_CASE("greedy NMS suppresses above the IoU threshold in score order", "[unit][eval]") {
  const torch::Tensor boxes = four_boxes();
  CHECK(greedy_nms(boxes, {}, 0.7, 0) == std::vector<int64_t>{0, 2, 3});     // B goes (0.9)
  CHECK(greedy_nms(boxes, {}, 0.6, 0) == std::vector<int64_t>{0, 2});        // D goes too (0.681)
  CHECK(greedy_nms(boxes, {}, 0.9, 0) == std::vector<int64_t>{0, 1, 2, 3});  // 0.9 is not above
  CHECK(greedy_nms(boxes, {}, 0.7, 2) == std::vector<int64_t>{0, 2});        // max_keep
  // Groups: B in its own group survives A.
  CHECK(greedy_nms(boxes, {0, 1, 0, 0}, 0.7, 0) == std::vector<int64_t>{0, 1, 2, 3});
  // A suppressed box does not suppress others: with A (0,0,10,10), X (3,0,13,10) and
  // Y (6,0,16,10), IoU(A, X) = IoU(X, Y) = 70/130 = 0.538 and IoU(A, Y) = 40/160 = 0.25; at 0.5
  // A removes X, and Y survives because X is gone.
  const torch::Tensor axy =
      torch::tensor({0.f, 0.f, 10.f, 10.f, 3.f, 0.f, 13.f, 10.f, 6.f, 0.f, 16.f, 10.f})
          .reshape({3, 4});
  CHECK(greedy_nms(axy, {}, 0.5, 0) == std::vector<int64_t>{0, 2});
  CHECK(greedy_nms(torch::zeros({0, 4}), {}, 0.7, 0).empty());
}

TEST_CASE("NMS postprocess multi-label class-aware with keypoints carried", "[unit][eval]") {
  const torch::Tensor decoded = decoded_five_anchors();
  NmsOptions o;  // conf 0.001, iou 0.7, max_det 300, multi-label, class-aware
  const auto out = nms_postprocess(decoded, 2, o);
  REQUIRE(out.size() == 1);
  const ImageDetections& d = out[0];
  // Rows: a4/c1 0.95, a0/c0 0.9, a1/c0 0.8 (suppressed by a0: IoU 0.9), a3/c0 0.7 (IoU 0.681
  // kept), a1/c1 0.6 (other class: kept).
  CHECK(scores_of(d) == std::vector<float>{0.95f, 0.9f, 0.7f, 0.6f});
  CHECK(classes_of(d) == std::vector<int64_t>{1, 0, 0, 1});
  CHECK(torch::equal(d.boxes_xyxy[1], torch::tensor({0.f, 0.f, 10.f, 10.f})));
  CHECK(torch::equal(d.boxes_xyxy[3], torch::tensor({0.f, 0.f, 10.f, 9.f})));
  CHECK(torch::equal(d.boxes_xyxy[0], torch::tensor({90.f, 90.f, 110.f, 110.f})));
  REQUIRE(d.keypoints.defined());
  CHECK(d.keypoints.sizes() == torch::IntArrayRef({4, 1, 3}));
  CHECK(torch::equal(d.keypoints[0][0], torch::tensor({40.f, 41.f, 0.5f})));  // a4's
  CHECK(torch::equal(d.keypoints[3][0], torch::tensor({10.f, 11.f, 0.5f})));  // a1's

  SECTION("best class only") {
    o.multi_label = false;  // a1 keeps only class 0 (0.8), which a0 suppresses
    const auto single = nms_postprocess(decoded, 2, o)[0];
    CHECK(scores_of(single) == std::vector<float>{0.95f, 0.9f, 0.7f});
  }
  SECTION("class-agnostic") {
    o.agnostic = true;  // a1/c1 (0.6) is now suppressed by a0 as well
    const auto agnostic = nms_postprocess(decoded, 2, o)[0];
    CHECK(scores_of(agnostic) == std::vector<float>{0.95f, 0.9f, 0.7f});
  }
  SECTION("max_det cut") {
    o.max_det = 2;
    CHECK(scores_of(nms_postprocess(decoded, 2, o)[0]) == std::vector<float>{0.95f, 0.9f});
  }
  SECTION("max_nms keeps only the best rows before NMS") {
    o.max_nms = 3;  // 0.95, 0.9, 0.8 enter; 0.8 is suppressed
    CHECK(scores_of(nms_postprocess(decoded, 2, o)[0]) == std::vector<float>{0.95f, 0.9f});
  }
  SECTION("higher confidence threshold") {
    o.conf = 0.75;
    CHECK(scores_of(nms_postprocess(decoded, 2, o)[0]) == std::vector<float>{0.95f, 0.9f});
  }
  SECTION("class offsets smaller than the boxes behave like the reference") {
    o.iou = 0.6;
    // Normal offsets: a1/c1 is alone in class 1 and survives; D (0.681 with A) goes.
    CHECK(scores_of(nms_postprocess(decoded, 2, o)[0]) == std::vector<float>{0.95f, 0.9f, 0.6f});
    // With max_wh 0.5 the class-1 copy of B is shifted by only 0.5 px and still overlaps A
    // (IoU 85.5 / 104.5 = 0.818), so it is suppressed across classes, exactly as offset boxes
    // in one torchvision NMS call would be.
    o.max_wh = 0.5;
    CHECK(scores_of(nms_postprocess(decoded, 2, o)[0]) == std::vector<float>{0.95f, 0.9f});
  }
}

TEST_CASE("max_nms cut keeps the earliest rows among equal scores", "[unit][eval]") {
  // [1, 4 + 1, 4]: anchors far apart; scores 0.5, 0.9, 0.5, 0.5 (one class).
  const torch::Tensor decoded = torch::tensor({10.f, 100.f, 200.f, 300.f,  // cx
                                               10.f, 10.f,  10.f,  10.f,   // cy
                                               8.f,  8.f,   8.f,   8.f,    // w
                                               8.f,  8.f,   8.f,   8.f,    // h
                                               0.5f, 0.9f,  0.5f,  0.5f})
                                    .reshape({1, 5, 4});
  NmsOptions o;
  o.max_nms = 3;  // 0.9 and the first two 0.5 rows (anchors 0 and 2) enter, anchor 3 does not
  const auto d = nms_postprocess(decoded, 1, o)[0];
  REQUIRE(d.size() == 3);
  CHECK(d.boxes_xyxy[0][0].item<float>() == 96.f);
  CHECK(d.boxes_xyxy[1][0].item<float>() == 6.f);
  CHECK(d.boxes_xyxy[2][0].item<float>() == 196.f);
  o.max_nms = 1;
  CHECK(nms_postprocess(decoded, 1, o)[0].boxes_xyxy[0][0].item<float>() == 96.f);
}

TEST_CASE("NMS options come from the val section", "[unit][eval]") {
  config::ValOptions val;
  val.conf = 0.01;
  val.iou = 0.6;
  val.max_det = 100;
  val.multi_label = false;
  val.agnostic_nms = true;
  const NmsOptions o = nms_options(val);
  CHECK(o.conf == 0.01);
  CHECK(o.iou == 0.6);
  CHECK(o.max_det == 100);
  CHECK_FALSE(o.multi_label);
  CHECK(o.agnostic);
  CHECK(nms_options(val, /*predict=*/true).conf == 0.25);
}

TEST_CASE("NMS postprocess handles a batch with an empty image", "[unit][eval]") {
  torch::Tensor decoded = torch::cat({decoded_five_anchors(), torch::zeros({1, 9, 5})}, 0);
  const auto out = nms_postprocess(decoded, 2, NmsOptions{});
  REQUIRE(out.size() == 2);
  CHECK(out[0].size() == 4);
  CHECK(out[1].size() == 0);
  CHECK(out[1].boxes_xyxy.sizes() == torch::IntArrayRef({0, 4}));
  CHECK(out[1].keypoints.sizes() == torch::IntArrayRef({0, 1, 3}));
  // Without keypoint channels nothing is carried.
  const auto plain = nms_postprocess(decoded_five_anchors().narrow(1, 0, 6), 2, NmsOptions{});
  CHECK_FALSE(plain[0].keypoints.defined());
  CHECK(plain[0].size() == 4);
}

TEST_CASE("end-to-end postprocess filters top-k rows by score", "[unit][eval]") {
  // [1, 4, 6 + 3]: x1 y1 x2 y2 score class kx ky kv, score-descending.
  const torch::Tensor det =
      torch::tensor({1.f, 2.f,  3.f, 4.f, 0.9f, 2.f,  5.f, 6.f,     0.7f, 5.f, 6.f,    7.f,
                     8.f, 0.5f, 0.f, 1.f, 1.f,  0.1f, 0.f, 0.f,     1.f,  1.f, 0.001f, 1.f,
                     0.f, 0.f,  0.f, 0.f, 0.f,  1.f,  1.f, 0.0005f, 1.f,  0.f, 0.f,    0.f})
          .reshape({1, 4, 9});
  const auto out = end2end_postprocess(det, 0.001, 300)[0];
  CHECK(scores_of(out) == std::vector<float>{0.9f, 0.5f});  // 0.001 is not above conf
  CHECK(classes_of(out) == std::vector<int64_t>{2, 0});
  CHECK(torch::equal(out.boxes_xyxy[1], torch::tensor({5.f, 6.f, 7.f, 8.f})));
  CHECK(torch::equal(out.keypoints[0][0], torch::tensor({5.f, 6.f, 0.7f})));
  CHECK(end2end_postprocess(det, 0.001, 1)[0].size() == 1);
  CHECK(end2end_postprocess(det, 0.95, 300)[0].size() == 0);
}

TEST_CASE("letterbox inverse maps input pixels back to the original image", "[unit][eval]") {
  // A 1280 x 720 image resized by 0.5 to 640 x 360 and padded to 640 x 384: pad_top 12.
  ImageFrame frame{42, 1280, 720, 0.5, 0.5, 0.0, 12.0};
  ImageDetections d;
  d.boxes_xyxy =
      torch::tensor({100.f, 62.f, 300.f, 112.f, -10.f, 5.f, 700.f, 400.f}).reshape({2, 4});
  d.scores = torch::tensor({0.9f, 0.8f});
  d.classes = torch::tensor({0, 1}, torch::kLong);
  d.keypoints = torch::tensor({320.f, 192.f, 0.8f, 650.f, 0.f, 0.3f}).reshape({2, 1, 3});
  const ImageDetections o = to_original_pixels(d, frame);
  // (100 - 0) / 0.5 = 200, (62 - 12) / 0.5 = 100, 600, 200.
  CHECK(torch::equal(o.boxes_xyxy[0], torch::tensor({200.f, 100.f, 600.f, 200.f})));
  // (-20, -14, 1400, 776) clipped to the 1280 x 720 image.
  CHECK(torch::equal(o.boxes_xyxy[1], torch::tensor({0.f, 0.f, 1280.f, 720.f})));
  CHECK(torch::equal(o.keypoints[0][0], torch::tensor({640.f, 360.f, 0.8f})));
  CHECK(torch::equal(o.keypoints[1][0], torch::tensor({1280.f, 0.f, 0.3f})));  // clipped
  CHECK(torch::equal(o.scores, d.scores));

  // Separate ratios per axis (a stretched resize): x / 0.5, (y - 4) / 0.25.
  ImageFrame stretched{1, 100, 100, 0.5, 0.25, 2.0, 4.0};
  ImageDetections one;
  one.boxes_xyxy = torch::tensor({12.f, 9.f, 22.f, 14.f}).reshape({1, 4});
  one.scores = torch::tensor({1.f});
  one.classes = torch::tensor({0}, torch::kLong);
  CHECK(torch::equal(to_original_pixels(one, stretched).boxes_xyxy[0],
                     torch::tensor({20.f, 20.f, 40.f, 40.f})));
}

TEST_CASE("detection arrays copy boxes scores classes and keypoints as the tensors hold them",
          "[unit][eval]") {
  ImageDetections d;
  // Double, non-contiguous boxes (a transposed [4, 2]) and int32 classes: converted as the
  // writers did (to float32 / int64 on the CPU).
  d.boxes_xyxy = torch::tensor({1.0, 5.0, 2.0, 6.0, 3.0, 7.0, 4.0, 8.25}, torch::kDouble)
                     .reshape({4, 2})
                     .t();  // rows (1, 2, 3, 4) and (5, 6, 7, 8.25)
  d.scores = torch::tensor({0.9f, 0.123456789f});
  d.classes = torch::tensor({3, 0}, torch::kInt);
  d.keypoints =
      torch::tensor({10.f, 11.f, 0.5f, 12.f, 13.f, 0.25f, 20.f, 21.f, 0.75f, 22.f, 23.f, 1.f})
          .reshape({2, 2, 3});
  const DetectionArrays a = to_arrays(d);
  REQUIRE(a.size() == 2);
  CHECK(a.boxes_xyxy[0] == std::array<float, 4>{1, 2, 3, 4});
  CHECK(a.boxes_xyxy[1] == std::array<float, 4>{5, 6, 7, 8.25f});
  CHECK(a.scores == std::vector<float>{0.9f, 0.123456789f});
  CHECK(a.classes == std::vector<int64_t>{3, 0});
  CHECK(a.kpt_count == 2);
  CHECK(a.keypoints == std::vector<float>{10, 11, 0.5f, 12, 13, 0.25f, 20, 21, 0.75f, 22, 23, 1});

  d.keypoints = torch::Tensor();  // a detection model: no keypoints
  const DetectionArrays boxes_only = to_arrays(d);
  CHECK(boxes_only.kpt_count == 0);
  CHECK(boxes_only.keypoints.empty());

  ImageDetections none;  // an image without detections, with or without tensors
  CHECK(to_arrays(none).size() == 0);
  none.boxes_xyxy = torch::zeros({0, 4});
  none.scores = torch::zeros({0});
  none.classes = torch::zeros({0}, torch::kLong);
  none.keypoints = torch::zeros({0, 17, 3});
  const DetectionArrays empty = to_arrays(none);
  CHECK(empty.size() == 0);
  CHECK(empty.boxes_xyxy.empty());
  CHECK(empty.keypoints.empty());
}

TEST_CASE("COCO records use category ids top-left boxes and rounding", "[unit][eval]") {
  ImageDetections d;
  d.boxes_xyxy = torch::tensor({200.0004f, 100.f, 600.f, 250.5f}).reshape({1, 4});
  d.scores = torch::tensor({0.123456789f});
  d.classes = torch::tensor({1}, torch::kLong);
  d.keypoints = torch::tensor({10.12345f, 20.5f, 0.987654f}).reshape({1, 1, 3});
  const auto records = to_coco_records(d, 7, {1, 3});
  REQUIRE(records.size() == 1);
  const CocoRecord& r = records[0];
  CHECK(r.image_id == 7);
  CHECK(r.category_id == 3);  // contiguous 1 -> COCO id 3
  CHECK(r.bbox == std::array<double, 4>{200.0, 100.0, 400.0, 150.5});
  CHECK(r.score == 0.12346);
  CHECK(r.keypoints == std::vector<double>{10.123, 20.5, 0.98765});

  RecordRounding exact{-1, -1, -1};
  CHECK(to_coco_records(d, 7, {1, 3}, exact)[0].score == static_cast<double>(0.123456789f));

  d.classes = torch::tensor({2}, torch::kLong);
  CHECK_THROWS_AS(to_coco_records(d, 7, {1, 3}), DataError);
}

TEST_CASE("predictions.json is COCO results format and round-trips exactly", "[unit][eval]") {
  test::TempDir dir;
  std::vector<CocoRecord> records(2);
  records[0] = {1, 18, {10.5, 20.25, 30.0, 40.125}, 0.98765, {}};
  records[1] = {2, 1, {0.1, 0.2, 0.3, 0.30000000000000004}, 1.0 / 3.0, {1.5, 2.5, 0.25}};
  write_predictions_json(dir.file("predictions.json"), records);
  const auto json = nlohmann::json::parse(read_file(dir.file("predictions.json")));
  REQUIRE(json.is_array());
  REQUIRE(json.size() == 2);
  CHECK(json[0]["image_id"] == 1);
  CHECK(json[0]["category_id"] == 18);
  CHECK(json[0]["bbox"] == nlohmann::json({10.5, 20.25, 30.0, 40.125}));
  CHECK(json[0]["score"].get<double>() == 0.98765);
  CHECK_FALSE(json[0].contains("keypoints"));
  CHECK(json[1]["bbox"][3].get<double>() == 0.30000000000000004);  // shortest round trip
  CHECK(json[1]["score"].get<double>() == 1.0 / 3.0);
  CHECK(json[1]["keypoints"] == nlohmann::json({1.5, 2.5, 0.25}));

  write_predictions_json(dir.file("empty.json"), {});
  CHECK(nlohmann::json::parse(read_file(dir.file("empty.json"))) == nlohmann::json::array());
}
