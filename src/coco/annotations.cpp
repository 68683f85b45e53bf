// The annotation table's builders; see annotations.h.
#include "coco/annotations.h"

#include "common/errors.h"

namespace detrain::coco {

void AnnotationTable::add_image(int64_t id, std::string file, int64_t width, int64_t height) {
  image_ids.push_back(id);
  image_files.push_back(std::move(file));
  image_widths.push_back(width);
  image_heights.push_back(height);
}

void AnnotationTable::add_annotation(const Annotation& a) {
  const uint8_t keypoints = a.keypoints.empty() ? 0 : kHasKeypoints;
  add_annotation(a, kHasBbox | kHasArea | kHasIscrowd | kHasNumKeypoints | keypoints);
}

void AnnotationTable::add_annotation(const Annotation& a, uint8_t fields) {
  if (!a.keypoints.empty()) {
    if (a.keypoints.size() % 3 != 0)
      throw DataError(source + ": annotation " + std::to_string(a.id) + " has " +
                      std::to_string(a.keypoints.size()) +
                      " keypoint values, not a multiple of 3 (x, y, v)");
    const int k = static_cast<int>(a.keypoints.size() / 3);
    if (keypoints_per_instance == 0 && num_annotations() > 0 && ann_keypoints.empty()) {
      // Earlier annotations had no keypoints: give them zero-filled rows (and no kHasKeypoints).
      ann_keypoints.assign(num_annotations() * 3 * static_cast<size_t>(k), 0.0);
    }
    if (keypoints_per_instance == 0) keypoints_per_instance = k;
    if (k != keypoints_per_instance)
      throw DataError(source + ": annotation " + std::to_string(a.id) + " has " +
                      std::to_string(k) + " keypoints but earlier ones have " +
                      std::to_string(keypoints_per_instance));
  }
  ann_id.push_back(a.id);
  ann_image_id.push_back(a.image_id);
  ann_category_id.push_back(a.category_id);
  ann_bbox.push_back(a.bbox);
  ann_area.push_back(a.area);
  ann_iscrowd.push_back(a.iscrowd ? 1 : 0);
  ann_num_keypoints.push_back(a.num_keypoints);
  if (keypoints_per_instance > 0) {
    if (a.keypoints.empty())
      ann_keypoints.resize(ann_keypoints.size() + 3 * static_cast<size_t>(keypoints_per_instance),
                           0.0);
    else
      ann_keypoints.insert(ann_keypoints.end(), a.keypoints.begin(), a.keypoints.end());
  }
  ann_fields.push_back(fields);
}

void AnnotationTable::clear_images() {
  image_ids.clear();
  image_files.clear();
  image_widths.clear();
  image_heights.clear();
}

void AnnotationTable::clear_annotations(int k) {
  ann_id.clear();
  ann_image_id.clear();
  ann_category_id.clear();
  ann_bbox.clear();
  ann_area.clear();
  ann_iscrowd.clear();
  ann_num_keypoints.clear();
  ann_keypoints.clear();
  ann_fields.clear();
  keypoints_per_instance = k;
}

}  // namespace detrain::coco
