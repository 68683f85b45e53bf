// Plain data for the COCO evaluator: ground truth and detections as flat columns (what the JSON
// loaders fill and what the trainer hands over without a JSON round trip), and the parameters
// of pycocotools' Params. No LibTorch here: the evaluator builds and runs on its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace detrain::eval {

enum class IouType { kBbox, kKeypoints };

// "bbox" / "keypoints".
const char* iou_type_name(IouType type);
// Parses "bbox" or "keypoints"; throws ConfigError otherwise ("segm" is named as unsupported).
IouType parse_iou_type(const std::string& name);

struct BoxXywh {
  double x = 0, y = 0, w = 0, h = 0;
};

struct CocoCategory {
  int64_t id = 0;
  std::string name;
};

// One ground-truth annotation, for building a CocoGroundTruth in memory.
struct GtAnnotation {
  int64_t id = 0;
  int64_t image_id = 0;
  int64_t category_id = 0;
  BoxXywh bbox;
  double area = 0;  // COCO's mask area (decides small/medium/large), not w * h
  bool iscrowd = false;
  int num_keypoints = 0;          // the annotation's field, not a count of visible points
  std::vector<double> keypoints;  // [K, 3] (x, y, v) or empty
};

// Fields an annotation may lack in a JSON file. They are checked only when the annotation is
// evaluated (pycocotools reads them there), so an unused record never fails a run.
enum GtField : uint8_t {
  kGtBbox = 1,
  kGtArea = 2,
  kGtIscrowd = 4,
  kGtKeypoints = 8,
  kGtNumKeypoints = 16,
  kGtAllFields = 31,
};

// A COCO ground-truth set: images, categories and annotations in file order, as columns.
struct CocoGroundTruth {
  std::string source = "<memory>";  // file name for error messages
  std::vector<int64_t> image_ids;   // the `images` list in file order
  std::vector<CocoCategory> categories;
  int keypoints_per_instance = 0;  // K (0 when no annotation carries keypoints)

  std::vector<int64_t> ann_id;
  std::vector<int64_t> ann_image_id;
  std::vector<int64_t> ann_category_id;
  std::vector<BoxXywh> ann_bbox;
  std::vector<double> ann_area;
  std::vector<uint8_t> ann_iscrowd;
  std::vector<int32_t> ann_num_keypoints;
  std::vector<double> ann_keypoints;  // [N, K, 3] when K > 0
  std::vector<uint8_t> ann_fields;    // GtField bits present

  size_t num_annotations() const { return ann_id.size(); }
  void add_image(int64_t id) { image_ids.push_back(id); }
  void add_category(int64_t id, std::string name = "") {
    categories.push_back({id, std::move(name)});
  }
  // Appends one annotation; its keypoints must hold 3 * K values (K is set by the first
  // annotation that has keypoints). Throws DataError on a mismatch.
  void add_annotation(const GtAnnotation& annotation);
};

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
// COCO's 17 person keypoint sigmas, divided by 10 as pycocotools does (a second rounding).
std::vector<double> coco_person_sigmas();

}  // namespace detrain::eval
