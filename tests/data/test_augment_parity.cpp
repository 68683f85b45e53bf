// Parity of LetterBox and RandomPerspective with the reference outputs in
// augment.safetensors (golden README section 6): images bit-exact (the reference used
// OpenCV's resize / copyMakeBorder / warpAffine as we do), boxes and keypoints within 1e-4 px,
// and the same boxes kept.
#include <torch/torch.h>

#include <array>
#include <catch2/catch.hpp>
#include <opencv2/core.hpp>
#include <opencv2/core/version.hpp>
#include <opencv2/imgproc.hpp>

#include "data/hsv.h"
#include "data/letterbox.h"
#include "data/mosaic.h"
#include "data/random_affine.h"
#include "model/safetensors.h"
#include "model/tensor_checks.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::data;

namespace {

// Boxes and keypoints: the golden README's tolerance for perspective (float32 round-off).
constexpr double kLabelTolerancePx = 1e-4;

cv::Mat to_mat(const torch::Tensor& hwc) {
  torch::Tensor t = hwc.contiguous();
  return cv::Mat(static_cast<int>(t.size(0)), static_cast<int>(t.size(1)), CV_8UC3,
                 t.data_ptr<uint8_t>())
      .clone();
}

torch::Tensor to_tensor(const cv::Mat& m) {
  return torch::from_blob(m.data, {m.rows, m.cols, 3}, torch::kUInt8).clone();
}

torch::Tensor boxes_tensor(const Sample& s) {
  torch::Tensor t = torch::empty({static_cast<int64_t>(s.size()), 4});  // [N, 4]
  for (size_t i = 0; i < s.size(); ++i)
    for (int j = 0; j < 4; ++j) t[int64_t(i)][j] = s.boxes_xyxy_px[i][size_t(j)];
  return t;
}

// Appends normalised cx, cy, w, h rows [N, 4] as pixel boxes of `s`'s image, with their classes
// (the row number when `cls` is undefined, to see which rows a warp keeps).
void add_xywhn_boxes(Sample& s, const torch::Tensor& xywhn, const torch::Tensor& cls = {}) {
  const float w = static_cast<float>(s.width()), h = static_cast<float>(s.height());
  for (int64_t i = 0; i < xywhn.size(0); ++i) {
    const float cx = xywhn[i][0].item<float>() * w, cy = xywhn[i][1].item<float>() * h;
    const float bw = xywhn[i][2].item<float>() * w, bh = xywhn[i][3].item<float>() * h;
    s.boxes_xyxy_px.push_back({cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2});
    s.classes.push_back(static_cast<int32_t>(cls.defined() ? cls[i].item<float>() : i));
  }
}

// Counts differing pixels and names the first few (row, col, channel: ours vs reference).
std::string image_mismatch(const torch::Tensor& ours, const torch::Tensor& ref) {
  const auto diff = (ours.to(torch::kInt32) - ref.to(torch::kInt32)).abs();
  const auto idx = torch::nonzero(diff);
  std::string out = std::to_string(idx.size(0)) + " differing values";
  for (int64_t i = 0; i < std::min<int64_t>(idx.size(0), 5); ++i) {
    const auto y = idx[i][0].item<int64_t>(), x = idx[i][1].item<int64_t>(),
               c = idx[i][2].item<int64_t>();
    out += "; (" + std::to_string(y) + "," + std::to_string(x) + "," + std::to_string(c) +
           ") ours " + std::to_string(ours[y][x][c].item<int>()) + " ref " +
           std::to_string(ref[y][x][c].item<int>());
  }
  return out;
}

// A warped image against the reference's. `input` warped with the reference's matrix by the
// OpenCV detrain links must equal ours bit for bit (same call, flags and border). Against the
// reference's own image: bit for bit when the golden was made with that OpenCV; otherwise within
// 3 levels on at most 10 % of the values, because OpenCV releases round warpAffine's fixed-point
// bilinear weights differently (pip OpenCV 5.1 in the reference environment, which Ultralytics
// 8.4.190 requires to be >= 4.7, against Debian's 4.6: measured 3 levels at most on 8.3-8.7 % of
// the values of a 160 px warp; a half-pixel shift moves far more, by far more).
void check_warped(const torch::Tensor& ours, const cv::Mat& input, const cv::Matx33f& m,
                  const torch::Tensor& ref, const model::SafetensorsFile& golden) {
  cv::Mat direct;
  cv::warpAffine(input, direct, cv::Mat(m).rowRange(0, 2), cv::Size(160, 160), cv::INTER_LINEAR,
                 cv::BORDER_CONSTANT, cv::Scalar(114, 114, 114));
  CHECK(torch::equal(ours, to_tensor(direct)));
  INFO(image_mismatch(ours, ref) << "; golden OpenCV " << golden.metadata.at("opencv_version")
                                 << ", ours " << CV_VERSION);
  if (golden.metadata.at("opencv_version") == CV_VERSION) {
    CHECK(torch::equal(ours, ref));
    return;
  }
  const auto diff = (ours.to(torch::kInt32) - ref.to(torch::kInt32)).abs();
  CHECK(diff.max().item<int>() <= 3);
  CHECK(diff.gt(0).sum().item<int64_t>() <= ours.numel() / 10);
}

}  // namespace

TEST_CASE("letterbox matches the reference bit for bit", "[parity][data][augment]") {
  const std::string path = test::golden("augment.safetensors");
  const auto golden = model::read_safetensors(path);
  // letterbox640 has r = 1 and top 107: rows 107..532 are the decoded source (golden README).
  const torch::Tensor source =
      golden.at("letterbox640.output").slice(0, 107, 533);               // [426, 640, 3]
  const torch::Tensor xywhn = golden.at("letterbox.input_boxes_xywhn");  // [3, 4]

  struct Case {
    const char* name;
    torch::Tensor input;
    int size;
  };
  const std::vector<Case> cases = {
      {"letterbox640", source, 640},
      {"letterbox160", source, 160},  // 106.5 rows round to 106 (Python's half-to-even)
      {"letterbox_crop192", source.slice(0, 100, 200).slice(1, 200, 350), 192}};
  for (const auto& c : cases) {
    SECTION(c.name) {
      Sample s;
      s.image = to_mat(c.input);
      const float w = static_cast<float>(s.width()), h = static_cast<float>(s.height());
      for (int64_t i = 0; i < xywhn.size(0); ++i) {
        const auto b = xywhn[i];
        const float cx = b[0].item<float>() * w, cy = b[1].item<float>() * h;
        const float bw = b[2].item<float>() * w, bh = b[3].item<float>() * h;
        s.boxes_xyxy_px.push_back({cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2});
        s.classes.push_back(0);
      }
      letterbox(s, {c.size, c.size, true, true, 114});
      const torch::Tensor ref = golden.at(std::string(c.name) + ".output");
      const torch::Tensor ours = to_tensor(s.image);
      REQUIRE(ours.sizes() == ref.sizes());
      INFO(image_mismatch(ours, ref));
      CHECK(torch::equal(ours, ref));
      const auto report = test::check_close(c.name, boxes_tensor(s),
                                            golden.at(std::string(c.name) + ".boxes_xyxy_px"), 0,
                                            kLabelTolerancePx);
      INFO(report.details);
      CHECK(report.ok);
    }
  }
}

TEST_CASE("random perspective with the reference's matrix matches its outputs",
          "[parity][data][augment]") {
  const std::string path = test::golden("augment.safetensors");
  const auto golden = model::read_safetensors(path);
  const torch::Tensor boxes = golden.at("perspective.input_boxes_xyxy_px");  // [5, 4]
  const torch::Tensor kpts = golden.at("perspective.input_keypoints_px");    // [5, 17, 3]
  for (const char* name : {"general", "default"}) {
    SECTION(name) {
      const std::string p = std::string("perspective.") + name;
      Sample s;
      s.image = to_mat(golden.at("letterbox160.output"));
      s.kpt_count = 17;
      for (int64_t i = 0; i < boxes.size(0); ++i) {
        s.boxes_xyxy_px.push_back({boxes[i][0].item<float>(), boxes[i][1].item<float>(),
                                   boxes[i][2].item<float>(), boxes[i][3].item<float>()});
        s.classes.push_back(static_cast<int32_t>(i));  // the row number, to see which are kept
      }
      const auto flat = kpts.contiguous();
      s.keypoints_px.assign(flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel());
      AffineDraw draw;
      const torch::Tensor m = golden.at(p + ".M");
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) draw.matrix(r, c) = m[r][c].item<float>();
      draw.scale = golden.at(p + ".scale")[0].item<float>();
      warp_sample(s, draw, 160, 160);

      check_warped(to_tensor(s.image), to_mat(golden.at("letterbox160.output")), draw.matrix,
                   golden.at(p + ".output_img"), golden);

      const torch::Tensor kept = golden.at(p + ".kept");  // [5] bool
      std::vector<int32_t> expected_rows;
      for (int64_t i = 0; i < kept.size(0); ++i)
        if (kept[i].item<bool>()) expected_rows.push_back(static_cast<int32_t>(i));
      REQUIRE(s.classes == expected_rows);

      const auto box_report =
          test::check_close(p + " boxes", boxes_tensor(s), golden.at(p + ".output_boxes_xyxy_px"),
                            0, kLabelTolerancePx);
      INFO(box_report.details);
      CHECK(box_report.ok);
      const torch::Tensor ours_kpts =
          torch::from_blob(s.keypoints_px.data(), {static_cast<int64_t>(s.size()), 17, 3}).clone();
      const auto kpt_report = test::check_close(
          p + " keypoints", ours_kpts, golden.at(p + ".output_keypoints_px"), 0, kLabelTolerancePx);
      INFO(kpt_report.details);
      CHECK(kpt_report.ok);
    }
  }
}

// Without mosaic (close_mosaic epochs) 8.4.190 warps the image as loaded, 160 x 107 here, straight
// into 160 x 160 from its own centre (C = -(80, 53.5)); 8.4.41 letterboxed it first (top pad 26,
// C = -80), which moves the content half a pixel. The reference's matrix maps the loaded image's
// centre to its translation T, our draw does the same, and warping with its matrix reproduces its
// image and labels.
TEST_CASE("without mosaic the loaded image is warped from its own centre as 8.4.190 does",
          "[parity][data][augment]") {
  const auto golden = model::read_safetensors(test::golden("augment.safetensors"));
  const std::string p = "perspective_nomosaic";
  const torch::Tensor input = golden.at(p + ".input_img");  // [107, 160, 3]
  const int w = static_cast<int>(input.size(1)), h = static_cast<int>(input.size(0));
  REQUIRE(h % 2 == 1);  // an odd side: the case where the two conventions differ
  cv::Matx33f m;
  const torch::Tensor ref_m = golden.at(p + ".M");
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) m(r, c) = ref_m[r][c].item<float>();
  // M = T S R P C: the centre (w/2, h/2) lands on T, inside translate 0.1 of the output centre.
  const cv::Vec3f centre = m * cv::Vec3f(w / 2.0f, h / 2.0f, 1.0f);
  CHECK(std::abs(centre[0] / centre[2] - 80.0f) <= 0.1f * 160 + 1e-3f);
  CHECK(std::abs(centre[1] / centre[2] - 80.0f) <= 0.1f * 160 + 1e-3f);
  // Ours with every random range at zero: exactly the translation (80 - 80, 80 - 53.5).
  config::AugmentOptions still;
  still.degrees = still.translate = still.scale = still.shear = still.perspective = 0;
  Rng rng(1);
  const AffineDraw ours = draw_affine(rng, still, w, h, 160, 160);
  CHECK(ours.matrix(0, 2) == 0.0f);
  CHECK(ours.matrix(1, 2) == 26.5f);

  Sample s;
  s.image = to_mat(input);
  add_xywhn_boxes(s, golden.at(p + ".input_boxes_xywhn"));
  AffineDraw draw;
  draw.matrix = m;
  draw.scale = golden.at(p + ".scale")[0].item<float>();
  warp_sample(s, draw, 160, 160);
  check_warped(to_tensor(s.image), to_mat(input), m, golden.at(p + ".output_img"), golden);
  const torch::Tensor kept = golden.at(p + ".kept");
  std::vector<int32_t> expected_rows;
  for (int64_t i = 0; i < kept.size(0); ++i)
    if (kept[i].item<bool>()) expected_rows.push_back(static_cast<int32_t>(i));
  REQUIRE(s.classes == expected_rows);
  // The boxes go through xywhn -> px in another operation order than the reference's: a few
  // float32 ulps of 160 px.
  const auto report = test::check_close(p + " boxes", boxes_tensor(s),
                                        golden.at(p + ".output_boxes_xyxy_px"), 0, 1e-4);
  INFO(report.details);
  CHECK(report.ok);
}

// RandomHSV with the reference's drawn gains (8.4.190, np.random.seed(0)): the three lookup tables
// equal its numpy ones byte for byte; the image through them equals ours exactly where the
// golden's OpenCV is the one linked (the colour conversions are OpenCV's), else within one level.
TEST_CASE("HSV tables and image with the reference's gains match 8.4.190",
          "[parity][data][augment]") {
  const auto golden = model::read_safetensors(test::golden("augment.safetensors"));
  const torch::Tensor r = golden.at("hsv.r");  // [3] float64
  const HsvGains gains{r[0].item<double>(), r[1].item<double>(), r[2].item<double>()};
  const HsvTables tables = hsv_tables(gains);
  const torch::Tensor lut = golden.at("hsv.lut");  // [256, 3]: hue, saturation, value
  int64_t table_mismatches = 0;
  for (int i = 0; i < 256; ++i)
    table_mismatches += (tables.hue[i] != lut[i][0].item<uint8_t>()) +
                        (tables.sat[i] != lut[i][1].item<uint8_t>()) +
                        (tables.val[i] != lut[i][2].item<uint8_t>());
  CHECK(table_mismatches == 0);
  cv::Mat image = to_mat(golden.at("letterbox160.output"));
  apply_hsv(image, gains);
  const torch::Tensor ours = to_tensor(image), ref = golden.at("hsv.output");
  INFO(image_mismatch(ours, ref) << "; golden OpenCV " << golden.metadata.at("opencv_version")
                                 << ", ours " << CV_VERSION);
  if (golden.metadata.at("opencv_version") == CV_VERSION)
    CHECK(torch::equal(ours, ref));
  else
    CHECK((ours.to(torch::kInt32) - ref.to(torch::kInt32)).abs().max().item<int>() <= 1);
}

// Mosaic placement of 8.4.190 (Mosaic(n=4) at imgsz 160, its drawn centre): every tile's
// destination and source rectangle, the 320 x 320 canvas (a copy of pixels: exact) and the
// labels after shifting, clipping and dropping empty boxes, from the same four loaded tiles.
TEST_CASE("mosaic places tiles and labels as 8.4.190 does", "[parity][data][augment]") {
  const auto golden = model::read_safetensors(test::golden("augment.safetensors"));
  std::array<Sample, 4> tiles;
  for (int k = 0; k < 4; ++k) {
    const std::string t = "mosaic.tile" + std::to_string(k);
    Sample& s = tiles[size_t(k)];
    s.image = to_mat(golden.at(t + ".img"));
    add_xywhn_boxes(s, golden.at(t + ".boxes_xywhn"), golden.at(t + ".cls"));
  }
  const torch::Tensor centre = golden.at("mosaic.center_yx");
  const int yc = static_cast<int>(centre[0].item<int64_t>()),
            xc = static_cast<int>(centre[1].item<int64_t>());
  const std::array<const Sample*, 4> ptrs{&tiles[0], &tiles[1], &tiles[2], &tiles[3]};
  const auto layout = mosaic_layout(ptrs, 160, xc, yc);
  const torch::Tensor ref_layout = golden.at("mosaic.layout");  // [4, 10]
  for (int k = 0; k < 4; ++k) {
    INFO("tile " << k);
    const auto& l = layout[size_t(k)];
    const auto row = [&](int j) { return static_cast<int>(ref_layout[k][j].item<int64_t>()); };
    CHECK(l.canvas.x == row(0));
    CHECK(l.canvas.y == row(1));
    CHECK(l.canvas.x + l.canvas.width == row(2));
    CHECK(l.canvas.y + l.canvas.height == row(3));
    CHECK(l.src_x == row(4));
    CHECK(l.src_y == row(5));
  }
  const Sample canvas = mosaic4(ptrs, 160, xc, yc);
  const torch::Tensor ref_img = golden.at("mosaic.output_img");
  INFO(image_mismatch(to_tensor(canvas.image), ref_img));
  CHECK(torch::equal(to_tensor(canvas.image), ref_img));
  const torch::Tensor ref_cls = golden.at("mosaic.output_cls");
  REQUIRE(canvas.size() == static_cast<size_t>(ref_cls.size(0)));
  for (size_t i = 0; i < canvas.size(); ++i)
    CHECK(canvas.classes[i] == static_cast<int32_t>(ref_cls[int64_t(i)].item<float>()));
  // Box coordinates: xywhn -> px in another float32 operation order than the reference's.
  const auto report = test::check_close("mosaic boxes", boxes_tensor(canvas),
                                        golden.at("mosaic.output_boxes_xyxy_px"), 0, 1e-4);
  INFO(report.details);
  CHECK(report.ok);
}
