// Builders and defaults for the evaluator's plain data; see coco_types.h.
#include "eval/coco_types.h"

#include <algorithm>

#include "coco/keypoint_sigmas.h"
#include "common/errors.h"

namespace detrain::eval {

const char* iou_type_name(IouType type) { return type == IouType::kBbox ? "bbox" : "keypoints"; }

IouType parse_iou_type(const std::string& name) {
  if (name == "bbox") return IouType::kBbox;
  if (name == "keypoints") return IouType::kKeypoints;
  if (name == "segm")
    throw ConfigError(
        "iou type 'segm' is not supported (mask IoU needs the RLE rasteriser); use "
        "bbox or keypoints");
  throw ConfigError("unknown iou type '" + name + "'; use bbox or keypoints");
}

void CocoDetections::reserve(size_t n) {
  image_id.reserve(n);
  category_id.reserve(n);
  score.reserve(n);
  bbox.reserve(n);
  area.reserve(n);
  if (keypoints_per_instance > 0) keypoints.reserve(n * 3 * keypoints_per_instance);
}

void CocoDetections::add(int64_t image, int64_t category, const BoxXywh& box, double s) {
  image_id.push_back(image);
  category_id.push_back(category);
  score.push_back(s);
  bbox.push_back(box);
  area.push_back(box.w * box.h);
  if (keypoints_per_instance > 0)
    keypoints.resize(keypoints.size() + 3 * static_cast<size_t>(keypoints_per_instance), 0.0);
}

void CocoDetections::add(int64_t image, int64_t category, const BoxXywh& box, double s,
                         const double* keypoints_k3) {
  if (keypoints_per_instance <= 0)
    throw DataError(source + ": set keypoints_per_instance before adding keypoint results");
  image_id.push_back(image);
  category_id.push_back(category);
  score.push_back(s);
  bbox.push_back(box);
  area.push_back(box.w * box.h);
  keypoints.insert(keypoints.end(), keypoints_k3, keypoints_k3 + 3 * keypoints_per_instance);
}

BoxXywh keypoint_extent(const double* keypoints_k3, int num_keypoints) {
  double x0 = keypoints_k3[0], x1 = keypoints_k3[0];
  double y0 = keypoints_k3[1], y1 = keypoints_k3[1];
  for (int k = 1; k < num_keypoints; ++k) {
    x0 = std::min(x0, keypoints_k3[3 * k]);
    x1 = std::max(x1, keypoints_k3[3 * k]);
    y0 = std::min(y0, keypoints_k3[3 * k + 1]);
    y1 = std::max(y1, keypoints_k3[3 * k + 1]);
  }
  return {x0, y0, x1 - x0, y1 - y0};
}

void CocoDetections::add_keypoints_only(int64_t image, int64_t category, double s,
                                        const double* keypoints_k3) {
  if (keypoints_per_instance <= 0)
    throw DataError(source + ": set keypoints_per_instance before adding keypoint results");
  const BoxXywh box = keypoint_extent(keypoints_k3, keypoints_per_instance);
  image_id.push_back(image);
  category_id.push_back(category);
  score.push_back(s);
  bbox.push_back(box);
  area.push_back(box.w * box.h);
  keypoints.insert(keypoints.end(), keypoints_k3, keypoints_k3 + 3 * keypoints_per_instance);
}

std::vector<double> numpy_linspace(double start, double stop, int num) {
  std::vector<double> values(static_cast<size_t>(std::max(num, 0)));
  if (num <= 0) return values;
  const int div = num - 1;
  const double delta = stop - start;
  const double step = div > 0 ? delta / div : 0.0;
  for (int i = 0; i < num; ++i) {
    // numpy divides before scaling when the step underflows to zero (gh-5437).
    const double scaled = div > 0 && step == 0 ? (i / static_cast<double>(div)) * delta
                          : div > 0            ? i * step
                                               : i * delta;
    values[static_cast<size_t>(i)] = scaled + start;
  }
  if (num > 1) values.back() = stop;
  return values;
}

std::vector<double> coco_person_sigmas() { return coco::person_keypoint_sigmas(); }

CocoParams CocoParams::defaults(IouType type) {
  CocoParams p;
  p.iou_type = type;
  p.iou_thresholds = numpy_linspace(0.5, 0.95, 10);
  p.recall_thresholds = numpy_linspace(0.0, 1.0, 101);
  const double big = 1e5 * 1e5;  // pycocotools writes 1e5 ** 2
  if (type == IouType::kBbox) {
    p.max_dets = {1, 10, 100};
    p.area_ranges = {{"all", 0, big},
                     {"small", 0, 32 * 32},
                     {"medium", 32 * 32, 96 * 96},
                     {"large", 96 * 96, big}};
  } else {
    p.max_dets = {20};
    p.area_ranges = {{"all", 0, big}, {"medium", 32 * 32, 96 * 96}, {"large", 96 * 96, big}};
    p.keypoint_sigmas = coco_person_sigmas();
  }
  return p;
}

}  // namespace detrain::eval
