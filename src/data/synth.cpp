// Synthetic shapes data set; see synth.h. Every image is a pure function of (seed, split,
// index) through its own detrain::Rng stream, so images are generated on worker threads in
// any order and the files are identical whatever the thread count.
#include "data/synth.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <sstream>
#include <thread>

#include "coco/keypoint_sigmas.h"
#include "common/atomic_file.h"
#include "common/cores.h"
#include "common/errors.h"
#include "common/rng.h"

namespace detrain::data {
namespace fs = std::filesystem;

namespace {

constexpr int kNumKeypoints = static_cast<int>(coco::kPersonKeypoints);
constexpr int kPerson = 0;
constexpr int kRectangle = 1, kEllipse = 2, kTriangle = 3, kCross = 4;
constexpr double kPi = 3.14159265358979323846;

const std::array<const char*, kNumKeypoints> kKeypointNames = {
    "nose",           "left_eye",   "right_eye",   "left_ear",   "right_ear",   "left_shoulder",
    "right_shoulder", "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_hip",
    "right_hip",      "left_knee",  "right_knee",  "left_ankle", "right_ankle"};
const std::array<int, kNumKeypoints> kFlipIdx = {0,  2, 1,  4,  3,  6,  5,  8, 7,
                                                 10, 9, 12, 11, 14, 13, 16, 15};
// COCO's person skeleton, 0-based.
const std::vector<std::array<int, 2>> kSkeleton = {
    {15, 13}, {13, 11}, {16, 14}, {14, 12}, {11, 12}, {5, 11}, {6, 12}, {5, 6}, {5, 7}, {6, 8},
    {7, 9},   {8, 10},  {1, 2},   {0, 1},   {0, 2},   {1, 3},  {2, 4},  {3, 5}, {4, 6}};

struct Box {
  double x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  double area() const { return std::max(0.0, x2 - x1) * std::max(0.0, y2 - y1); }
};

double iou(const Box& a, const Box& b) {
  const double w = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  const double h = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  if (w <= 0 || h <= 0) return 0;
  const double inter = w * h;
  return inter / (a.area() + b.area() - inter);
}

Box clip(const Box& b, int width, int height) {
  return {std::clamp(b.x1, 0.0, double(width)), std::clamp(b.y1, 0.0, double(height)),
          std::clamp(b.x2, 0.0, double(width)), std::clamp(b.y2, 0.0, double(height))};
}

// One generated object in image pixels.
struct SynthObject {
  int cls = 0;
  Box box;          // clipped to the image
  double area = 0;  // COCO area: mask pixels (shapes) or 0.53 x box area (persons)
  cv::Mat mask;     // [H, W] uint8, the object's own pixels
  std::array<cv::Point2d, kNumKeypoints> kpts{};
  std::array<int, kNumKeypoints> vis{};  // COCO visibility 0 / 1 / 2
};

struct SynthImage {
  cv::Mat image;  // [H, W, 3] BGR
  std::vector<SynthObject> objects;
};

cv::Scalar hsv_to_bgr(double h, double s, double v) {
  cv::Mat hsv(1, 1, CV_8UC3, cv::Scalar(h, s, v)), bgr;
  cv::cvtColor(hsv, bgr, cv::COLOR_HSV2BGR);
  const auto p = bgr.at<cv::Vec3b>(0, 0);
  return cv::Scalar(p[0], p[1], p[2]);
}

cv::Scalar vivid_colour(Rng& rng) {
  return hsv_to_bgr(rng.uniform(0, 180), rng.uniform(150, 255), rng.uniform(150, 255));
}

// A shape or figure as drawing primitives in image pixels, so the same geometry paints the
// image, the object's mask and (through its extent) the box.
struct Primitive {
  enum Kind { kPolygon, kLine, kDisc } kind;
  std::vector<cv::Point2d> points;  // polygon vertices, line ends, disc centre
  double size = 0;                  // line thickness or disc radius
  cv::Scalar colour;
};

Box extent(const std::vector<Primitive>& prims) {
  Box b{1e300, 1e300, -1e300, -1e300};
  for (const auto& p : prims) {
    const double pad = p.kind == Primitive::kLine   ? p.size / 2
                       : p.kind == Primitive::kDisc ? p.size
                                                    : 0;
    for (const auto& q : p.points) {
      b.x1 = std::min(b.x1, q.x - pad);
      b.y1 = std::min(b.y1, q.y - pad);
      b.x2 = std::max(b.x2, q.x + pad);
      b.y2 = std::max(b.y2, q.y + pad);
    }
  }
  return b;
}

void translate(std::vector<Primitive>& prims, std::array<cv::Point2d, kNumKeypoints>* kpts,
               double dx, double dy) {
  for (auto& p : prims)
    for (auto& q : p.points) q += cv::Point2d(dx, dy);
  if (kpts)
    for (auto& k : *kpts) k += cv::Point2d(dx, dy);
}

// Draws with 4 fractional bits so sub-pixel geometry is kept.
constexpr int kShift = 4;
cv::Point fixed_point(const cv::Point2d& p) {
  return {static_cast<int>(std::lround(p.x * (1 << kShift))),
          static_cast<int>(std::lround(p.y * (1 << kShift)))};
}

void paint(cv::Mat& target, const std::vector<Primitive>& prims, bool as_mask) {
  const int line_type = as_mask ? cv::LINE_8 : cv::LINE_AA;
  for (const auto& p : prims) {
    const cv::Scalar colour = as_mask ? cv::Scalar(255) : p.colour;
    if (p.kind == Primitive::kPolygon) {
      std::vector<cv::Point> pts;
      for (const auto& q : p.points) pts.push_back(fixed_point(q));
      cv::fillPoly(target, std::vector<std::vector<cv::Point>>{pts}, colour, line_type, kShift);
    } else if (p.kind == Primitive::kLine) {
      cv::line(target, fixed_point(p.points[0]), fixed_point(p.points[1]), colour,
               std::max(1, static_cast<int>(std::lround(p.size))), line_type, kShift);
    } else {
      cv::circle(target, fixed_point(p.points[0]),
                 static_cast<int>(std::lround(p.size * (1 << kShift))), colour, cv::FILLED,
                 line_type, kShift);
    }
  }
}

cv::Point2d rotate(const cv::Point2d& p, double angle) {
  const double c = std::cos(angle), s = std::sin(angle);
  return {p.x * c - p.y * s, p.x * s + p.y * c};
}

// A filled shape of class `cls` centred at the origin with about `size` pixels across.
std::vector<Primitive> shape_primitives(int cls, double size, Rng& rng) {
  const cv::Scalar colour = vivid_colour(rng);
  const double angle = rng.uniform(-kPi / 4, kPi / 4);
  std::vector<cv::Point2d> pts;
  if (cls == kRectangle) {
    const double w = size * rng.uniform(0.5, 1.0), h = size * rng.uniform(0.5, 1.0);
    for (const auto& c : {cv::Point2d(-w / 2, -h / 2), cv::Point2d(w / 2, -h / 2),
                          cv::Point2d(w / 2, h / 2), cv::Point2d(-w / 2, h / 2)})
      pts.push_back(rotate(c, angle));
  } else if (cls == kEllipse) {
    const double a = size / 2 * rng.uniform(0.6, 1.0), b = size / 2 * rng.uniform(0.35, 1.0);
    for (int i = 0; i < 48; ++i) {
      const double t = 2 * kPi * i / 48;
      pts.push_back(rotate({a * std::cos(t), b * std::sin(t)}, angle));
    }
  } else if (cls == kTriangle) {
    const double start = rng.uniform(0, 2 * kPi);
    for (int i = 0; i < 3; ++i) {
      const double t = start + 2 * kPi * i / 3 + rng.uniform(-0.25, 0.25);
      const double r = size / 2 * rng.uniform(0.85, 1.1);
      pts.push_back({r * std::cos(t), r * std::sin(t)});
    }
  } else {  // cross: a plus sign of arm width `t`
    const double r = size / 2, t = size * rng.uniform(0.14, 0.2);
    const double outline[12][2] = {{-t, -r}, {t, -r}, {t, -t}, {r, -t}, {r, t},   {t, t},
                                   {t, r},   {-t, r}, {-t, t}, {-r, t}, {-r, -t}, {-t, -t}};
    for (const auto& q : outline) pts.push_back(rotate({q[0], q[1]}, angle));
  }
  return {Primitive{Primitive::kPolygon, pts, 0, colour}};
}

// A stick figure facing the camera (its left on the image's right) about `height` pixels tall,
// hip centre at the origin, with its 17 keypoints.
std::vector<Primitive> person_primitives(double height, Rng& rng,
                                         std::array<cv::Point2d, kNumKeypoints>& kpts) {
  const double H = height;
  const double lean = rng.uniform(-0.15, 0.15);
  const double shoulder_w = 0.11 * H * rng.uniform(0.85, 1.15), hip_w = 0.07 * H;
  const cv::Point2d head(rng.uniform(-0.02, 0.02) * H, -0.44 * H);
  const double head_r = 0.06 * H, turn = rng.uniform(-1, 1) * 0.015 * H;
  kpts[0] = head + cv::Point2d(turn, 0.015 * H);               // nose
  kpts[1] = head + cv::Point2d(0.022 * H + turn, -0.01 * H);   // left eye
  kpts[2] = head + cv::Point2d(-0.022 * H + turn, -0.01 * H);  // right eye
  kpts[3] = head + cv::Point2d(0.058 * H, 0);                  // left ear
  kpts[4] = head + cv::Point2d(-0.058 * H, 0);                 // right ear
  kpts[5] = {shoulder_w, -0.32 * H};
  kpts[6] = {-shoulder_w, -0.32 * H};
  kpts[11] = {hip_w, 0};
  kpts[12] = {-hip_w, 0};
  for (int side = 0; side < 2; ++side) {
    const double sign = side == 0 ? 1.0 : -1.0;  // left limbs reach to +x
    const double arm = rng.uniform(-0.2, 2.6), bend = rng.uniform(-0.5, 1.6);
    kpts[7 + side] = kpts[5 + side] + 0.15 * H * cv::Point2d(sign * std::sin(arm), std::cos(arm));
    kpts[9 + side] =
        kpts[7 + side] + 0.14 * H * cv::Point2d(sign * std::sin(arm + bend), std::cos(arm + bend));
    const double leg = rng.uniform(-0.05, 0.5), knee = rng.uniform(-0.45, 0.1);
    kpts[13 + side] = kpts[11 + side] + 0.22 * H * cv::Point2d(sign * std::sin(leg), std::cos(leg));
    kpts[15 + side] =
        kpts[13 + side] + 0.21 * H * cv::Point2d(sign * std::sin(leg + knee), std::cos(leg + knee));
  }
  for (auto& k : kpts) k = rotate(k, lean);
  const cv::Point2d head_c = rotate(head, lean);

  const cv::Scalar skin =
      hsv_to_bgr(rng.uniform(5, 20), rng.uniform(60, 170), rng.uniform(130, 255));
  const cv::Scalar shirt = vivid_colour(rng), trousers = vivid_colour(rng);
  const double limb = std::max(2.0, 0.035 * H), hand = std::max(1.5, 0.02 * H);
  const double eye = std::max(1.0, 0.008 * H);
  std::vector<Primitive> p;
  p.push_back({Primitive::kPolygon, {kpts[5], kpts[6], kpts[12], kpts[11]}, 0, shirt});
  const cv::Point2d neck = (kpts[5] + kpts[6]) * 0.5;
  p.push_back({Primitive::kLine, {neck, head_c}, limb, skin});
  for (int side = 0; side < 2; ++side) {
    const double sign = side == 0 ? 1.0 : -1.0;
    p.push_back({Primitive::kLine, {kpts[5 + side], kpts[7 + side]}, limb, shirt});
    p.push_back({Primitive::kLine, {kpts[7 + side], kpts[9 + side]}, limb, skin});
    p.push_back({Primitive::kDisc, {kpts[9 + side]}, hand, skin});
    p.push_back({Primitive::kLine, {kpts[11 + side], kpts[13 + side]}, limb * 1.2, trousers});
    p.push_back({Primitive::kLine, {kpts[13 + side], kpts[15 + side]}, limb * 1.2, trousers});
    const cv::Point2d toe = kpts[15 + side] + rotate(cv::Point2d(sign * 0.05 * H, 0.01 * H), lean);
    p.push_back({Primitive::kLine, {kpts[15 + side], toe}, limb, cv::Scalar(40, 40, 40)});
  }
  p.push_back({Primitive::kDisc, {head_c}, head_r, skin});
  for (int e = 3; e <= 4; ++e) p.push_back({Primitive::kDisc, {kpts[e]}, eye * 1.6, skin * 0.8});
  for (int e = 1; e <= 2; ++e)
    p.push_back({Primitive::kDisc, {kpts[e]}, eye, cv::Scalar(30, 30, 30)});
  p.push_back({Primitive::kDisc, {kpts[0]}, eye, cv::Scalar(40, 40, 160)});
  return p;
}

void draw_background(cv::Mat& image, Rng& rng) {
  const cv::Scalar a = hsv_to_bgr(rng.uniform(0, 180), rng.uniform(0, 90), rng.uniform(50, 180));
  const cv::Scalar b = hsv_to_bgr(rng.uniform(0, 180), rng.uniform(0, 90), rng.uniform(50, 180));
  const double t = rng.uniform(0, 2 * kPi);
  const double dx = std::cos(t), dy = std::sin(t);
  const double span = std::abs(dx) * image.cols + std::abs(dy) * image.rows;
  for (int y = 0; y < image.rows; ++y) {
    auto* row = image.ptr<cv::Vec3b>(y);
    for (int x = 0; x < image.cols; ++x) {
      double f = ((x - image.cols / 2.0) * dx + (y - image.rows / 2.0) * dy) / span + 0.5;
      f = std::clamp(f, 0.0, 1.0);
      for (int c = 0; c < 3; ++c) row[x][c] = cv::saturate_cast<uchar>(a[c] * (1 - f) + b[c] * f);
    }
  }
  // Low-contrast clutter: blobs and strokes near the background colours, then blurred.
  const int clutter = 4 + static_cast<int>(rng.below(8));
  for (int i = 0; i < clutter; ++i) {
    const cv::Scalar base = rng.bernoulli(0.5) ? a : b;
    const cv::Scalar c =
        base + cv::Scalar(rng.uniform(-35, 35), rng.uniform(-35, 35), rng.uniform(-35, 35));
    const cv::Point p1(static_cast<int>(rng.below(image.cols)),
                       static_cast<int>(rng.below(image.rows)));
    if (rng.bernoulli(0.5)) {
      cv::circle(image, p1, 5 + static_cast<int>(rng.below(image.cols / 4)), c, cv::FILLED,
                 cv::LINE_AA);
    } else {
      const cv::Point p2(static_cast<int>(rng.below(image.cols)),
                         static_cast<int>(rng.below(image.rows)));
      cv::line(image, p1, p2, c, 1 + static_cast<int>(rng.below(6)), cv::LINE_AA);
    }
  }
  cv::GaussianBlur(image, image, cv::Size(0, 0), 2.0);
}

void add_noise(cv::Mat& image, Rng& rng) {
  const size_t n = image.total() * 3;
  uchar* p = image.data;
  for (size_t i = 0; i < n; i += 8) {
    uint64_t bits = rng.next_u64();
    for (size_t k = 0; k < 8 && i + k < n; ++k, bits >>= 8)
      p[i + k] =
          cv::saturate_cast<uchar>(static_cast<int>(p[i + k]) + static_cast<int>(bits % 25) - 12);
  }
}

SynthImage generate_image(const SynthOptions& o, uint64_t split, uint64_t index) {
  Rng rng(o.seed, {split, index});
  const int width = o.min_side + static_cast<int>(rng.below(o.max_side - o.min_side + 1));
  const int height = o.min_side + static_cast<int>(rng.below(o.max_side - o.min_side + 1));
  SynthImage out;
  out.image = cv::Mat(height, width, CV_8UC3);
  draw_background(out.image, rng);

  const int wanted = 1 + static_cast<int>(rng.below(o.max_objects));
  const double short_side = std::min(width, height);
  for (int n = 0; n < wanted; ++n) {
    const int cls = rng.bernoulli(o.person_share) ? kPerson : 1 + static_cast<int>(rng.below(4));
    for (int attempt = 0; attempt < 30; ++attempt) {
      SynthObject obj;
      obj.cls = cls;
      std::vector<Primitive> prims =
          cls == kPerson ? person_primitives(height * rng.uniform(0.4, 0.85), rng, obj.kpts)
                         : shape_primitives(cls, short_side * rng.uniform(0.15, 0.45), rng);
      const Box local = extent(prims);
      // Mostly fully inside; sometimes cut by the border (up to 30% of the object).
      const double slack = rng.bernoulli(0.15) ? 0.3 : 0.0;
      const double lw = local.x2 - local.x1, lh = local.y2 - local.y1;
      const double x_lo = -local.x1 - slack * lw, x_hi = width - local.x2 + slack * lw;
      const double y_lo = -local.y1 - slack * lh, y_hi = height - local.y2 + slack * lh;
      if (x_hi < x_lo || y_hi < y_lo) continue;
      const double dx = rng.uniform(x_lo, x_hi), dy = rng.uniform(y_lo, y_hi);
      translate(prims, cls == kPerson ? &obj.kpts : nullptr, dx, dy);
      const Box full = extent(prims);
      obj.box = clip(full, width, height);
      if (obj.box.area() < 0.6 * full.area() || obj.box.x2 - obj.box.x1 < 4 ||
          obj.box.y2 - obj.box.y1 < 4)
        continue;
      bool crowded = false;
      for (const auto& other : out.objects) crowded = crowded || iou(obj.box, other.box) > 0.25;
      if (crowded) continue;

      paint(out.image, prims, false);
      obj.mask = cv::Mat::zeros(height, width, CV_8U);
      paint(obj.mask, prims, true);
      obj.area = cls == kPerson ? 0.53 * obj.box.area() : cv::countNonZero(obj.mask);
      for (int k = 0; k < kNumKeypoints; ++k) {
        const auto& p = obj.kpts[k];
        const bool inside = p.x >= 0 && p.y >= 0 && p.x < width && p.y < height;
        obj.vis[k] = cls == kPerson && inside ? 2 : 0;
      }
      out.objects.push_back(std::move(obj));
      break;
    }
  }
  // Keypoints covered by an object drawn later are labelled but not visible (COCO v = 1).
  for (size_t i = 0; i < out.objects.size(); ++i) {
    auto& person = out.objects[i];
    if (person.cls != kPerson) continue;
    for (int k = 0; k < kNumKeypoints; ++k) {
      if (person.vis[k] != 2) continue;
      const cv::Point px(static_cast<int>(person.kpts[k].x), static_cast<int>(person.kpts[k].y));
      for (size_t j = i + 1; j < out.objects.size(); ++j)
        if (out.objects[j].mask.at<uchar>(px) != 0) person.vis[k] = 1;
    }
  }
  cv::GaussianBlur(out.image, out.image, cv::Size(0, 0), 0.6);
  add_noise(out.image, rng);
  return out;
}

double round2(double v) { return std::round(v * 100.0) / 100.0; }

struct SplitFiles {
  std::string name;
  uint64_t id;
  int64_t count;
  int64_t first_image_id;
};

std::string yaml_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

template <class T, size_t N>
std::string yaml_list(const std::array<T, N>& values) {
  std::string s = "[";
  for (size_t i = 0; i < N; ++i) {
    std::ostringstream v;
    v << values[i];
    s += (i ? ", " : "") + v.str();
  }
  return s + "]";
}

std::string descriptor_text(const std::string& root, bool pose, const SynthOptions& o) {
  const std::string ann = pose ? "person_keypoints" : "instances";
  std::string s = "# detrain synthetic shapes data set (seed " + std::to_string(o.seed) + ", " +
                  std::to_string(o.train_images) + " train / " + std::to_string(o.val_images) +
                  " val images), written by `detrain data synth`.\n";
  s += pose ? "# Persons (stick figures) with 17 COCO-layout keypoints.\n"
            : "# Shapes and stick-figure persons, 5 classes.\n";
  s += "path: " + yaml_quoted(root) + "\n";
  s += std::string("task: ") + (pose ? "pose" : "detect") + "\n";
  for (const char* split : {"train", "val"}) {
    s += std::string(split) + ":\n";
    s += "  annotations: annotations/" + ann + "_" + split + ".json\n";
    s += std::string("  images: images/") + split + "\n";
  }
  if (pose) s += "keep_images: with_keypoints\n";
  s += "classes:\n";
  const auto& names = synth_class_names();
  for (size_t i = 0; i < (pose ? 1 : names.size()); ++i)
    s += "  - {id: " + std::to_string(i + 1) + ", name: " + names[i] + "}\n";
  if (!pose) return s;
  s += "kpt_shape: [17, 3]\n";
  std::array<std::string, kNumKeypoints> kpt_names;
  for (int k = 0; k < kNumKeypoints; ++k) kpt_names[k] = kKeypointNames[k];
  s += "kpt_names: " + yaml_list(kpt_names) + "\n";
  s += "flip_idx: " + yaml_list(kFlipIdx) + "\n";
  // No oks_sigmas: a 17-keypoint descriptor gets COCO's exact values (coco/keypoint_sigmas.h),
  // which six printed digits would round.
  s += "# oks_sigmas: COCO's, the default for 17 keypoints\n";
  s += "skeleton: [";
  for (size_t i = 0; i < kSkeleton.size(); ++i)
    s += (i ? ", [" : "[") + std::to_string(kSkeleton[i][0]) + ", " +
         std::to_string(kSkeleton[i][1]) + "]";
  return s + "]\n";
}

nlohmann::ordered_json categories_json(bool pose) {
  nlohmann::ordered_json cats = nlohmann::ordered_json::array();
  const auto& names = synth_class_names();
  for (size_t i = 0; i < (pose ? 1 : names.size()); ++i) {
    nlohmann::ordered_json c;
    c["supercategory"] = i == kPerson ? "person" : "shape";
    c["id"] = i + 1;
    c["name"] = names[i];
    if (pose) {
      c["keypoints"] = kKeypointNames;
      nlohmann::ordered_json skeleton = nlohmann::ordered_json::array();
      for (const auto& limb : kSkeleton) skeleton.push_back({limb[0] + 1, limb[1] + 1});
      c["skeleton"] = skeleton;
    }
    cats.push_back(c);
  }
  return cats;
}

}  // namespace

const std::vector<std::string>& synth_class_names() {
  static const std::vector<std::string> names = {"person", "rectangle", "ellipse", "triangle",
                                                 "cross"};
  return names;
}

SynthSummary write_synth_dataset(const std::string& out_dir, const SynthOptions& o) {
  if (o.min_side < 32 || o.max_side < o.min_side)
    throw ConfigError("synth: image sides must satisfy 32 <= min_side <= max_side");
  if (o.max_objects < 1 || o.train_images < 1 || o.val_images < 1)
    throw ConfigError("synth: need at least one image per split and one object per image");
  const fs::path root = fs::absolute(out_dir).lexically_normal();
  const std::vector<SplitFiles> splits = {{"train", 0, o.train_images, 1},
                                          {"val", 1, o.val_images, 1000001}};
  ensure_writable_dir((root / "annotations").string());
  for (const auto& s : splits) ensure_writable_dir((root / "images" / s.name).string());

  SynthSummary summary;
  summary.root = root.string();
  for (const auto& split : splits) {
    std::vector<std::vector<SynthObject>> objects(static_cast<size_t>(split.count));
    std::vector<std::pair<int, int>> sizes(static_cast<size_t>(split.count));
    std::atomic<int64_t> next{0};
    std::exception_ptr failure;
    std::mutex failure_mutex;
    auto work = [&] {
      try {
        for (int64_t i; (i = next++) < split.count;) {
          SynthImage img = generate_image(o, split.id, static_cast<uint64_t>(i));
          std::vector<uchar> jpeg;
          cv::imencode(".jpg", img.image, jpeg, {cv::IMWRITE_JPEG_QUALITY, o.jpeg_quality});
          char name[32];
          std::snprintf(name, sizeof name, "%07lld.jpg",
                        static_cast<long long>(split.first_image_id + i));
          const std::string path = (root / "images" / split.name / name).string();
          std::ofstream file(path, std::ios::binary | std::ios::trunc);
          file.write(reinterpret_cast<const char*>(jpeg.data()),
                     static_cast<std::streamsize>(jpeg.size()));
          if (!file) throw IoError("cannot write " + path);
          for (auto& obj : img.objects) obj.mask.release();
          sizes[static_cast<size_t>(i)] = {img.image.cols, img.image.rows};
          objects[static_cast<size_t>(i)] = std::move(img.objects);
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = split.count;
      }
    };
    const int threads = std::max(1, o.threads > 0 ? o.threads : usable_cores());
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(work);
    for (auto& t : pool) t.join();
    if (failure) std::rethrow_exception(failure);

    nlohmann::ordered_json instances, keypoints;
    for (auto* doc : {&instances, &keypoints}) {
      (*doc)["info"] = {{"description", "detrain synthetic shapes"}, {"seed", o.seed}};
      (*doc)["images"] = nlohmann::ordered_json::array();
      (*doc)["annotations"] = nlohmann::ordered_json::array();
    }
    instances["categories"] = categories_json(false);
    keypoints["categories"] = categories_json(true);
    int64_t ann_id = split.first_image_id * 100;
    for (int64_t i = 0; i < split.count; ++i) {
      const int64_t image_id = split.first_image_id + i;
      char name[32];
      std::snprintf(name, sizeof name, "%07lld.jpg", static_cast<long long>(image_id));
      const nlohmann::ordered_json image = {{"id", image_id},
                                            {"file_name", name},
                                            {"width", sizes[i].first},
                                            {"height", sizes[i].second}};
      instances["images"].push_back(image);
      keypoints["images"].push_back(image);
      for (const auto& obj : objects[i]) {
        nlohmann::ordered_json ann = {
            {"id", ++ann_id},
            {"image_id", image_id},
            {"category_id", obj.cls + 1},
            {"bbox",
             {round2(obj.box.x1), round2(obj.box.y1), round2(obj.box.x2 - obj.box.x1),
              round2(obj.box.y2 - obj.box.y1)}},
            {"area", round2(obj.area)},
            {"iscrowd", 0}};
        instances["annotations"].push_back(ann);
        ++summary.instances;
        if (obj.cls != kPerson) continue;
        ++summary.persons;
        std::vector<double> flat;
        int labelled = 0;
        for (int k = 0; k < kNumKeypoints; ++k) {
          const bool has = obj.vis[k] > 0;
          flat.push_back(has ? round2(obj.kpts[k].x) : 0.0);
          flat.push_back(has ? round2(obj.kpts[k].y) : 0.0);
          flat.push_back(obj.vis[k]);
          labelled += has;
        }
        ann["keypoints"] = flat;
        ann["num_keypoints"] = labelled;
        keypoints["annotations"].push_back(ann);
      }
    }
    write_file_atomic((root / "annotations" / ("instances_" + split.name + ".json")).string(),
                      instances.dump() + "\n");
    write_file_atomic(
        (root / "annotations" / ("person_keypoints_" + split.name + ".json")).string(),
        keypoints.dump() + "\n");
    summary.images += split.count;
  }
  summary.detect_yaml = (root / "synth.yaml").string();
  summary.pose_yaml = (root / "synth-pose.yaml").string();
  write_file_atomic(summary.detect_yaml, descriptor_text(summary.root, false, o));
  write_file_atomic(summary.pose_yaml, descriptor_text(summary.root, true, o));
  return summary;
}

}  // namespace detrain::data
