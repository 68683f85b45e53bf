// Geometry of the augmentations: a filled rectangle with coloured keypoint dots is drawn, the
// image and its labels go through letterbox, random affine, mosaic + affine and flips, and the
// transformed box must match the rectangle's pixels (and each keypoint its dot) within 1 px.
// Also: flip_idx swaps left and right, keypoints leaving the image lose visibility, and box
// candidates drop what the reference drops.
#include <catch2/catch.hpp>
#include <cmath>
#include <opencv2/imgproc.hpp>
#include <sstream>

#include "common/rng.h"
#include "data/flip.h"
#include "data/letterbox.h"
#include "data/mixup.h"
#include "data/mosaic.h"
#include "data/random_affine.h"

using namespace detrain;
using namespace detrain::data;

namespace {

// Alignment bar from the issue: labels and pixels agree within 1 px (bilinear edges included).
constexpr double kAlignPx = 1.0;
const cv::Vec3b kDotColours[3] = {{0, 0, 255}, {0, 255, 0}, {255, 0, 0}};  // BGR red, green, blue

// A w x h grey image with one white rectangle and 3 keypoint dots (7 x 7) inside it.
Sample make_scene(int w, int h, cv::Rect rect, int32_t cls = 0) {
  Sample s;
  s.image = cv::Mat(h, w, CV_8UC3, cv::Scalar(40, 40, 40));
  s.image(rect).setTo(cv::Scalar(255, 255, 255));
  s.kpt_count = 3;
  s.boxes_xyxy_px.push_back(
      {float(rect.x), float(rect.y), float(rect.x + rect.width), float(rect.y + rect.height)});
  s.classes.push_back(cls);
  const cv::Point centres[3] = {{rect.x + rect.width / 2, rect.y + rect.height / 2},
                                {rect.x + 8, rect.y + 8},
                                {rect.x + rect.width - 9, rect.y + 8}};
  for (int k = 0; k < 3; ++k) {
    s.image(cv::Rect(centres[k].x - 3, centres[k].y - 3, 7, 7)).setTo(cv::Scalar(kDotColours[k]));
    // Pixel i spans [i, i + 1), so the dot's centre is at index + 0.5.
    s.keypoints_px.insert(s.keypoints_px.end(), {centres[k].x + 0.5f, centres[k].y + 0.5f, 2.0f});
  }
  return s;
}

bool is_bright(const cv::Vec3b& p) { return p[0] > 150 || p[1] > 150 || p[2] > 150; }
bool is_colour(const cv::Vec3b& p, const cv::Vec3b& c) {
  for (int i = 0; i < 3; ++i)
    if (std::abs(int(p[i]) - int(c[i])) > 90) return false;
  return true;
}

// Envelope of bright pixels inside `box` grown by `grow` px, as [x1, y1, x2, y2) edges.
bool bright_envelope(const cv::Mat& img, const BoxXyxy& box, int grow, BoxXyxy& out) {
  const int x0 = std::max(0, int(std::floor(box[0])) - grow);
  const int y0 = std::max(0, int(std::floor(box[1])) - grow);
  const int x1 = std::min(img.cols - 1, int(std::ceil(box[2])) + grow);
  const int y1 = std::min(img.rows - 1, int(std::ceil(box[3])) + grow);
  bool any = false;
  for (int y = y0; y <= y1; ++y)
    for (int x = x0; x <= x1; ++x) {
      if (!is_bright(img.at<cv::Vec3b>(y, x))) continue;
      out = any ? BoxXyxy{std::min(out[0], float(x)), std::min(out[1], float(y)),
                          std::max(out[2], float(x + 1)), std::max(out[3], float(y + 1))}
                : BoxXyxy{float(x), float(y), float(x + 1), float(y + 1)};
      any = true;
    }
  return any;
}

// Centroid (+0.5) of pixels of `colour` within `radius` of (x, y); false when there are none.
bool dot_centroid(const cv::Mat& img, float x, float y, const cv::Vec3b& colour, int radius,
                  double& cx, double& cy) {
  double sx = 0, sy = 0;
  int n = 0;
  for (int yy = int(y) - radius; yy <= int(y) + radius; ++yy)
    for (int xx = int(x) - radius; xx <= int(x) + radius; ++xx) {
      if (xx < 0 || yy < 0 || xx >= img.cols || yy >= img.rows) continue;
      if (!is_colour(img.at<cv::Vec3b>(yy, xx), colour)) continue;
      sx += xx + 0.5;
      sy += yy + 0.5;
      ++n;
    }
  if (n == 0) return false;
  cx = sx / n;
  cy = sy / n;
  return true;
}

// Checks every box against its rectangle's pixels and every visible keypoint (whose dot is
// well inside the image) against its dot. `colour_of(k)` says which dot keypoint k should be.
template <class ColourOf>
void check_aligned(const Sample& s, ColourOf colour_of, const std::string& what) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto& box = s.boxes_xyxy_px[i];
    BoxXyxy env{};
    INFO(what << ": box " << i << " [" << box[0] << ", " << box[1] << ", " << box[2] << ", "
              << box[3] << "]");
    REQUIRE(bright_envelope(s.image, box, 4, env));
    INFO("pixels [" << env[0] << ", " << env[1] << ", " << env[2] << ", " << env[3] << "]");
    for (int j = 0; j < 4; ++j) CHECK(std::abs(env[size_t(j)] - box[size_t(j)]) <= kAlignPx + 1e-6);
    for (int64_t k = 0; k < s.kpt_count; ++k) {
      const float* p = s.keypoints_px.data() + (i * size_t(s.kpt_count) + size_t(k)) * 3;
      if (p[2] == 0 || p[0] < 8 || p[1] < 8 || p[0] > s.width() - 8 || p[1] > s.height() - 8)
        continue;
      double cx = 0, cy = 0;
      INFO("keypoint " << k << " at (" << p[0] << ", " << p[1] << ")");
      REQUIRE(dot_centroid(s.image, p[0], p[1], colour_of(k), 6, cx, cy));
      INFO("dot centroid (" << cx << ", " << cy << ")");
      CHECK(std::abs(cx - p[0]) <= kAlignPx);
      CHECK(std::abs(cy - p[1]) <= kAlignPx);
    }
  }
}

auto same_colour = [](int64_t k) { return kDotColours[k]; };

}  // namespace

TEST_CASE("letterbox keeps boxes and keypoints on their pixels", "[unit][data][geometry]") {
  for (auto [w, h, out] : {std::array<int, 3>{300, 200, 256}, {200, 320, 160}, {120, 90, 256}}) {
    Sample s = make_scene(w, h, cv::Rect(w / 5, h / 4, w / 2, h / 2));
    letterbox(s, {out, out, true, true, 114});
    CHECK(s.width() == out);
    CHECK(s.height() == out);
    check_aligned(s, same_colour, "letterbox " + std::to_string(w) + "x" + std::to_string(h));
  }
}

TEST_CASE("random affine moves image, boxes and keypoints together", "[unit][data][geometry]") {
  config::AugmentOptions o;
  o.degrees = 15;
  o.shear = 3;
  o.scale = 0.3;
  o.translate = 0.1;
  for (uint64_t seed = 0; seed < 12; ++seed) {
    Sample s = make_scene(256, 256, cv::Rect(80, 90, 100, 70));
    Rng rng(seed);
    warp_sample(s, draw_affine(rng, o, 256, 256, 256, 256), 256, 256);
    check_aligned(s, same_colour, "affine seed " + std::to_string(seed));
  }
}

TEST_CASE("mosaic plus affine keeps every tile's labels on its pixels", "[unit][data][geometry]") {
  // Reference defaults (translate 0.1, scale 0.5, no rotation): tiles cut by the output border
  // stay axis-aligned, so the clipped box must still hug the pixels (with rotation, clipping the
  // rotated corners' envelope is looser than the visible part, in the reference too), and the
  // composed per-tile warp is used.
  config::AugmentOptions o;
  const int s = 256;
  for (uint64_t seed = 0; seed < 8; ++seed) {
    std::array<Sample, 4> tiles = {make_scene(256, 192, cv::Rect(60, 50, 120, 90), 0),
                                   make_scene(160, 256, cv::Rect(30, 70, 90, 120), 1),
                                   make_scene(256, 256, cv::Rect(100, 100, 110, 80), 2),
                                   make_scene(200, 150, cv::Rect(40, 30, 120, 90), 3)};
    Rng rng(seed);
    const auto [xc, yc] = draw_mosaic_center(rng, s);
    Sample m = mosaic4({&tiles[0], &tiles[1], &tiles[2], &tiles[3]}, s, xc, yc);
    CHECK(m.width() == 2 * s);
    check_aligned(m, same_colour, "mosaic canvas seed " + std::to_string(seed));
    const AffineDraw draw = draw_affine(rng, o, 2 * s, 2 * s, s, s);
    // The production path warps each tile straight into the output (no canvas).
    Sample composed = mosaic_warp({&tiles[0], &tiles[1], &tiles[2], &tiles[3]}, s, xc, yc, draw);
    CHECK(composed.width() == s);
    check_aligned(composed, same_colour, "mosaic + affine seed " + std::to_string(seed));
    // Same labels as canvas + warp, same pixels except the seams between tiles.
    warp_sample(m, draw, s, s);
    CHECK(composed.boxes_xyxy_px == m.boxes_xyxy_px);
    CHECK(composed.keypoints_px == m.keypoints_px);
    cv::Mat diff;
    cv::absdiff(composed.image, m.image, diff);
    const double differing = cv::countNonZero(diff.reshape(1)) / double(diff.total() * 3);
    INFO("seed " << seed << ": " << differing * 100 << " % of values differ");
    CHECK(differing < 0.01);  // seams: about two 1-px lines of a 256 x 256 output
  }
}

TEST_CASE("flips mirror labels; flip_idx swaps left and right keypoints",
          "[unit][data][geometry]") {
  const std::vector<int64_t> flip_idx = {0, 2, 1};  // 1 and 2 are a left/right pair
  Sample s = make_scene(240, 180, cv::Rect(50, 40, 120, 100));
  flip_horizontal(s, flip_idx);
  // After the flip keypoint k sits on the dot that was keypoint flip_idx[k].
  check_aligned(
      s, [&](int64_t k) { return kDotColours[flip_idx[size_t(k)]]; }, "fliplr");
  // The left keypoint (1) now lies left of the right one (2) again, as in the original.
  CHECK(s.keypoints_px[3] < s.keypoints_px[6]);

  Sample v = make_scene(240, 180, cv::Rect(50, 40, 120, 100));
  flip_vertical(v);
  check_aligned(v, same_colour, "flipud");
}

TEST_CASE("keypoints that leave the image lose visibility", "[unit][data][geometry]") {
  Sample s = make_scene(200, 200, cv::Rect(100, 60, 90, 80));
  AffineDraw shift;
  shift.matrix(0, 2) = 60;  // moves the right part of the rectangle out of the image
  warp_sample(s, shift, 200, 200);
  REQUIRE(s.size() == 1);
  const float* k = s.keypoints_px.data();
  // Keypoint 1 (x 108.5 -> 168.5) stays, keypoints 0 (145.5 -> 205.5) and 2 (181.5 -> 241.5)
  // leave: visibility 0, x clipped to the border.
  CHECK(k[3 * 1 + 2] == 2.0f);
  CHECK(k[3 * 0 + 2] == 0.0f);
  CHECK(k[3 * 2 + 2] == 0.0f);
  CHECK(k[3 * 2 + 0] == 200.0f);
  CHECK(s.boxes_xyxy_px[0][2] == 200.0f);  // the box is clipped
}

TEST_CASE("box candidates follow the reference's thresholds", "[unit][data][geometry]") {
  // Hand-computed cases of box_candidates(wh_thr 2, ar_thr 100, area_thr 0.1).
  CHECK(box_candidate({0, 0, 10, 10}, {0, 0, 10, 10}));
  CHECK_FALSE(box_candidate({0, 0, 10, 10}, {0, 0, 2, 10}));         // width 2 is not > 2
  CHECK_FALSE(box_candidate({0, 0, 100, 100}, {0, 0, 30, 30}));      // area ratio 0.09
  CHECK(box_candidate({0, 0, 100, 100}, {0, 0, 32, 32}));            // area ratio 0.1024
  CHECK_FALSE(box_candidate({0, 0, 1000, 10}, {0, 0, 1000, 9.9f}));  // aspect 101
}

TEST_CASE("mixup blends two samples and keeps both label sets", "[unit][data][geometry]") {
  Sample a = make_scene(64, 64, cv::Rect(4, 4, 20, 20), 0);
  Sample b = make_scene(64, 64, cv::Rect(30, 30, 20, 20), 1);
  a.image.setTo(cv::Scalar::all(200));
  b.image.setTo(cv::Scalar::all(100));
  mixup(a, b, 0.25);
  // 0.25 * 200 + 0.75 * 100 = 125 exactly (hand computation); truncation keeps 125.
  CHECK(a.image.at<cv::Vec3b>(10, 10) == cv::Vec3b(125, 125, 125));
  CHECK(a.classes == std::vector<int32_t>{0, 1});
  CHECK(a.keypoints_px.size() == 2 * 3 * 3);
  // Beta(32, 32) draws: mean 0.5, standard deviation 0.0620 (hand computation:
  // sqrt(32 * 32 / (64^2 * 65))); 2000 draws put the sample mean within 0.01 (> 7 sigma).
  Rng rng(9);
  double sum = 0;
  for (int i = 0; i < 2000; ++i) {
    const double r = draw_beta(rng, 32, 32);
    REQUIRE(r > 0.2);
    REQUIRE(r < 0.8);
    sum += r;
  }
  CHECK(std::abs(sum / 2000 - 0.5) < 0.01);
}
