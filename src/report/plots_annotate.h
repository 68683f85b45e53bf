// The reference's drawing vocabulary (Ultralytics 8.4.190 ultralytics/utils/plotting.py:
// Colors, Annotator.box_label and Annotator.kpts), shared by the batch mosaics and the predict
// drawings: the 20-colour class palette, the pose palette with COCO's 19-limb skeleton, boxes
// with filled labels, keypoints joined by limbs. Torch-free; images are BGR cv::Mat.
#pragma once

#include <array>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

namespace detrain::report {

// The reference's Colors palette (042AFF, 0BDBEB, F3F3F3, ...), BGR, by class index modulo 20.
cv::Scalar class_colour(int index);
// The text colour over a class colour: the reference's dark navy on its light palette entries
// (cyan, light grey, yellow-green, ...), white on the others.
cv::Scalar label_text_colour(int index);

// The keypoint drawing rule the reference applies: a keypoint or limb is drawn when its
// visibility (ground truth 0/1/2) or score is at least this.
constexpr float kKeypointConfThres = 0.25f;

// COCO's person skeleton as the reference draws it: 19 limbs, 0-based keypoint indices (legs,
// torso, arms, face).
const std::vector<std::array<int, 2>>& coco_skeleton();

// The limbs to draw: the data set's skeleton when it gives one, else COCO's for 17 keypoints
// (the reference's rule), else none (the reference draws other layouts as loose points).
std::vector<std::array<int, 2>> skeleton_for(int kpt_count,
                                             const std::vector<std::array<int, 2>>& given);

// How the reference's pose colours land in its pictures. Its palette is written as RGB; the
// mosaics (train_batch, val_batch) are RGB pictures, so they show it as written (arms orange,
// legs blue); its predict drawings are BGR pictures handed the same numbers, so they show red
// and blue swapped (arms blue, legs orange). detrain draws each as the reference does.
enum class PoseColours { kMosaic, kPredict };

// Keypoint k's colour (BGR): for 17 keypoints the reference's table (face green, arms, legs),
// otherwise the class palette by keypoint index, as the reference colours other layouts.
cv::Scalar keypoint_colour(int k, int kpt_count, PoseColours where);
// A limb's colour (BGR): a COCO limb (either direction) of a 17-keypoint set takes the
// reference's limb colour; any other limb takes its first keypoint's colour.
cv::Scalar limb_colour(const std::array<int, 2>& limb, int kpt_count, PoseColours where);

struct PoseStyle {
  int kpt_count = 0;
  std::vector<std::array<int, 2>> skeleton;  // from skeleton_for
  PoseColours colours = PoseColours::kMosaic;
  int radius = 2;          // keypoint dots (the reference: its line width)
  int limb_thickness = 1;  // limbs (the reference: ceil(line width / 2))
  float conf_thres = kKeypointConfThres;
};

// One instance's keypoints (`xyv`: K x (x, y, visibility or score), pixels of `img`): dots for
// those at or above conf_thres, then the limbs whose both ends are, as the reference draws them
// (limbs over dots; a limb with an end at negative coordinates is left out).
void draw_keypoints(cv::Mat& img, const float* xyv, const PoseStyle& style);

struct LabelFont {
  double scale = 0.5;  // Hershey simplex
  int thickness = 1;
};

// A box of `line_width` with its label on a filled strip of the box colour: above the box when
// it fits below `top_limit` (the picture's or the tile's top), else inside it; moved left when
// it would leave the picture on the right. An empty label draws the box alone.
void draw_box_label(cv::Mat& img, const std::array<float, 4>& xyxy, const std::string& label,
                    const cv::Scalar& colour, const cv::Scalar& text_colour, int line_width,
                    const LabelFont& font, int top_limit = 0);

// Python's round(): halves to even, as the reference's line widths round.
int round_half_even(double v);

}  // namespace detrain::report
