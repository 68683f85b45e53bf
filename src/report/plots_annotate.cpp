// See plots_annotate.h. Pixel positions truncate towards zero as the reference's int() does.
#include "report/plots_annotate.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

namespace detrain::report {

namespace {

constexpr int kPaletteSize = 20;

// Colors.hexs (RGB).
constexpr uint32_t kClassPalette[kPaletteSize] = {0x042AFF, 0x0BDBEB, 0xF3F3F3, 0x00DFB7, 0x111F68,
                                                  0xFF6FDD, 0xFF444F, 0xCCED00, 0x00F344, 0xBD00FF,
                                                  0x00B4FF, 0xDD00BA, 0x00FFFF, 0x26C000, 0x01FFB3,
                                                  0x7D24FF, 0x7B0068, 0xFF1B6C, 0xFC6D2F, 0xA2FF0B};

// Annotator.dark_colors, as class indices: the light entries that take dark text.
constexpr int kLightEntries[] = {1, 2, 3, 5, 7, 8, 12, 14, 19};

// Colors.pose_palette (RGB).
constexpr uint8_t kPosePalette[kPaletteSize][3] = {
    {255, 128, 0},   {255, 153, 51},  {255, 178, 102}, {230, 230, 0},   {255, 153, 255},
    {153, 204, 255}, {255, 102, 255}, {255, 51, 255},  {102, 178, 255}, {51, 153, 255},
    {255, 153, 153}, {255, 102, 102}, {255, 51, 51},   {153, 255, 153}, {102, 255, 102},
    {51, 255, 51},   {0, 255, 0},     {0, 0, 255},     {255, 0, 0},     {255, 255, 255}};

// Annotator.limb_color and Annotator.kpt_color: pose palette entries per COCO limb / keypoint.
constexpr int kLimbPalette[19] = {9, 9, 9, 9, 7, 7, 7, 0, 0, 0, 0, 0, 16, 16, 16, 16, 16, 16, 16};
constexpr int kKeypointPalette[17] = {16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 9, 9, 9, 9, 9, 9};
constexpr int kCocoKeypoints = 17;

// An RGB triple as it shows: as written in a mosaic (an RGB picture), channels swapped in a
// predict drawing (the reference writes the same numbers into a BGR picture).
cv::Scalar shown(uint8_t r, uint8_t g, uint8_t b, PoseColours where) {
  return where == PoseColours::kMosaic ? cv::Scalar(b, g, r) : cv::Scalar(r, g, b);
}

cv::Scalar pose_entry(int i, PoseColours where) {
  const uint8_t* p = kPosePalette[i];
  return shown(p[0], p[1], p[2], where);
}

cv::Point truncated(float x, float y) { return {static_cast<int>(x), static_cast<int>(y)}; }

}  // namespace

int round_half_even(double v) { return static_cast<int>(std::nearbyint(v)); }

cv::Scalar class_colour(int index) {
  const uint32_t rgb = kClassPalette[((index % kPaletteSize) + kPaletteSize) % kPaletteSize];
  return cv::Scalar(rgb & 0xFF, (rgb >> 8) & 0xFF, (rgb >> 16) & 0xFF);
}

cv::Scalar label_text_colour(int index) {
  const int i = ((index % kPaletteSize) + kPaletteSize) % kPaletteSize;
  const bool light =
      std::find(std::begin(kLightEntries), std::end(kLightEntries), i) != std::end(kLightEntries);
  return light ? class_colour(4) : cv::Scalar(255, 255, 255);  // 111F68, the palette's navy
}

const std::vector<std::array<int, 2>>& coco_skeleton() {
  static const std::vector<std::array<int, 2>> limbs = {
      {15, 13}, {13, 11}, {16, 14}, {14, 12}, {11, 12}, {5, 11}, {6, 12}, {5, 6}, {5, 7}, {6, 8},
      {7, 9},   {8, 10},  {1, 2},   {0, 1},   {0, 2},   {1, 3},  {2, 4},  {3, 5}, {4, 6}};
  return limbs;
}

std::vector<std::array<int, 2>> skeleton_for(int kpt_count,
                                             const std::vector<std::array<int, 2>>& given) {
  if (!given.empty()) return given;
  if (kpt_count == kCocoKeypoints) return coco_skeleton();
  return {};
}

cv::Scalar keypoint_colour(int k, int kpt_count, PoseColours where) {
  if (kpt_count == kCocoKeypoints && k >= 0 && k < kCocoKeypoints)
    return pose_entry(kKeypointPalette[k], where);
  const uint32_t rgb = kClassPalette[((k % kPaletteSize) + kPaletteSize) % kPaletteSize];
  return shown((rgb >> 16) & 0xFF, (rgb >> 8) & 0xFF, rgb & 0xFF, where);
}

cv::Scalar limb_colour(const std::array<int, 2>& limb, int kpt_count, PoseColours where) {
  if (kpt_count == kCocoKeypoints) {
    const auto& coco = coco_skeleton();
    for (size_t i = 0; i < coco.size(); ++i)
      if ((coco[i][0] == limb[0] && coco[i][1] == limb[1]) ||
          (coco[i][0] == limb[1] && coco[i][1] == limb[0]))
        return pose_entry(kLimbPalette[i], where);
  }
  return keypoint_colour(limb[0], kpt_count, where);
}

void draw_keypoints(cv::Mat& img, const float* xyv, const PoseStyle& style) {
  const int k_count = style.kpt_count;
  auto visible = [&](int k) { return xyv[k * 3 + 2] >= style.conf_thres; };
  for (int k = 0; k < k_count; ++k)
    if (visible(k))
      cv::circle(img, truncated(xyv[k * 3], xyv[k * 3 + 1]), style.radius,
                 keypoint_colour(k, k_count, style.colours), cv::FILLED, cv::LINE_AA);
  for (const auto& limb : style.skeleton) {
    const int a = limb[0], b = limb[1];
    if (a < 0 || b < 0 || a >= k_count || b >= k_count || !visible(a) || !visible(b)) continue;
    const cv::Point p = truncated(xyv[a * 3], xyv[a * 3 + 1]);
    const cv::Point q = truncated(xyv[b * 3], xyv[b * 3 + 1]);
    if (std::min({p.x, p.y, q.x, q.y}) < 0) continue;
    cv::line(img, p, q, limb_colour(limb, k_count, style.colours), style.limb_thickness,
             cv::LINE_AA);
  }
}

void draw_box_label(cv::Mat& img, const std::array<float, 4>& xyxy, const std::string& label,
                    const cv::Scalar& colour, const cv::Scalar& text_colour, int line_width,
                    const LabelFont& font, int top_limit) {
  cv::Point p1 = truncated(xyxy[0], xyxy[1]);
  cv::rectangle(img, p1, truncated(xyxy[2], xyxy[3]), colour, line_width, cv::LINE_AA);
  if (label.empty()) return;
  int baseline = 0;
  const cv::Size size =
      cv::getTextSize(label, cv::FONT_HERSHEY_SIMPLEX, font.scale, font.thickness, &baseline);
  const int w = size.width, h = size.height + 3;  // 3 px of padding, as the reference
  const bool outside = p1.y - top_limit >= h;
  p1.x = std::min(p1.x, img.cols - w);
  const cv::Point p2(p1.x + w, outside ? p1.y - h : p1.y + h);
  cv::rectangle(img, p1, p2, colour, cv::FILLED, cv::LINE_AA);
  cv::putText(img, label, {p1.x, outside ? p1.y - 2 : p1.y + h - 1}, cv::FONT_HERSHEY_SIMPLEX,
              font.scale, text_colour, font.thickness, cv::LINE_AA);
}

}  // namespace detrain::report
