// Plain data for the COCO evaluator: ground truth and detections as flat columns (what the JSON
// readers fill and what the trainer hands over without a JSON round trip), and the parameters
// of pycocotools' Params. No LibTorch here: the evaluator builds and runs on its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coco/annotations.h"

namespace detrain::eval {

enum class IouType { kBbox, kKeypoints };

// "bbox" / "keypoints".
const char* iou_type_name(IouType type);
// Parses "bbox" or "keypoints"; throws ConfigError otherwise ("segm" is named as unsupported).
IouType parse_iou_type(const std::string& name);

// The ground truth is the annotation table of coco/ as its reader fills it: the loader's
// training records come from the same table, so both always read a file alike. These are the
// evaluator's names for its parts.
using coco::BoxXywh;
using CocoCategory = coco::Category;
using GtAnnotation = coco::Annotation;
using CocoGroundTruth = coco::AnnotationTable;
constexpr uint8_t kGtBbox = coco::kHasBbox;
constexpr uint8_t kGtArea = coco::kHasArea;
constexpr uint8_t kGtIscrowd = coco::kHasIscrowd;
constexpr uint8_t kGtKeypoints = coco::kHasKeypoints;
constexpr uint8_t kGtNumKeypoints = coco::kHasNumKeypoints;
constexpr uint8_t kGtAllFields = coco::kHasAllFields;

// Detection results, one entry per result in file order, as columns. `bbox` and `area` follow
// pycocotools' loadRes: a result with a box has area w * h; a keypoint result without a box
// takes the box and area of the extent of all its K points (visibility ignored).
struct CocoDetections {
  std::string source = "<memory>";
  int keypoints_per_instance = 0;  // K; set before adding keypoint results

  std::vector<int64_t> image_id;
  std::vector<int64_t> category_id;
  std::vector<double> score;
  std::vector<BoxXywh> bbox;
  std::vector<double> area;
  std::vector<double> keypoints;  // [N, K, 3] when K > 0

  size_t size() const { return score.size(); }
  void reserve(size_t n);
  // A box result: area = w * h.
  void add(int64_t image_id, int64_t category_id, const BoxXywh& box, double score);
  // A keypoint result that carries a box (detectron2 writes one): area = w * h.
  void add(int64_t image_id, int64_t category_id, const BoxXywh& box, double score,
           const double* keypoints_k3);
  // A keypoint result without a box: box and area from the extent of all K points.
  void add_keypoints_only(int64_t image_id, int64_t category_id, double score,
                          const double* keypoints_k3);
};

// The box of a keypoint result without one, as pycocotools' loadRes computes it: the extent of
// all K points (visibility ignored).
BoxXywh keypoint_extent(const double* keypoints_k3, int num_keypoints);

struct AreaRange {
  std::string label;  // "all", "small", "medium", "large": summarize() looks ranges up by label
  double lo = 0;
  double hi = 0;  // closed on both ends, as in pycocotools
};

// pycocotools' Params. Defaults are bit-identical to numpy's linspace values.
struct CocoParams {
  IouType iou_type = IouType::kBbox;
  std::vector<int64_t> image_ids;     // empty: every image of the ground truth
  std::vector<int64_t> category_ids;  // empty: every category of the ground truth
  std::vector<double> iou_thresholds;
  std::vector<double> recall_thresholds;
  std::vector<int64_t> max_dets;  // sorted ascending before use, as pycocotools does
  std::vector<AreaRange> area_ranges;
  bool use_cats = true;
  std::vector<double> keypoint_sigmas;  // [K], keypoints only

  static CocoParams defaults(IouType type);
};

// numpy.linspace(start, stop, num) to the bit: start + i * ((stop - start) / (num - 1)), with
// the last value forced to `stop`.
std::vector<double> numpy_linspace(double start, double stop, int num);
// COCO's 17 person keypoint sigmas, divided by 10 as pycocotools does (coco/keypoint_sigmas.h).
std::vector<double> coco_person_sigmas();

}  // namespace detrain::eval
