// One COCO annotation file as plain columns: images (id, file name, size), categories and
// annotations (id, image, category, bbox, area, iscrowd, keypoints, num_keypoints) in file
// order. coco/annotations_json.h fills it; the data loader builds its training records from
// it and the evaluator scores against it as it is (eval::CocoGroundTruth is this table), so the
// two can never read one file differently. No LibTorch here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace detrain::coco {

struct BoxXywh {
  double x = 0, y = 0, w = 0, h = 0;
};

struct Category {
  int64_t id = 0;
  std::string name;
};

// One annotation, for building a table in memory.
struct Annotation {
  int64_t id = 0;
  int64_t image_id = 0;
  int64_t category_id = 0;
  BoxXywh bbox;
  double area = 0;  // COCO's mask area (decides small/medium/large), not w * h
  bool iscrowd = false;
  // The file's field: 0 means "no labelled keypoints" to pycocotools, any other value "some";
  // its sign is kept (a negative count is read as absent by the loader).
  int num_keypoints = 0;
  std::vector<double> keypoints;  // [K, 3] (x, y, v) or empty
};

// Fields an annotation may lack in a file. The evaluator checks them only when it evaluates the
// annotation (pycocotools reads them there), so an unused record never fails a run.
enum AnnotationField : uint8_t {
  kHasBbox = 1,
  kHasArea = 2,
  kHasIscrowd = 4,
  kHasKeypoints = 8,
  kHasNumKeypoints = 16,
  kHasAllFields = 31,
};

struct AnnotationTable {
  std::string source = "<memory>";  // file name for error messages

  // The `images` list in file order. File names and sizes are read when the reader is asked
  // for them (the loader); otherwise they stay empty / 0, one entry per image all the same.
  std::vector<int64_t> image_ids;
  std::vector<std::string> image_files;  // `file_name`, relative to the split's image folder
  std::vector<int64_t> image_widths;
  std::vector<int64_t> image_heights;

  std::vector<Category> categories;
  int keypoints_per_instance = 0;  // K (0 when no annotation carries keypoints)

  // The `annotations` list in file order, as columns.
  std::vector<int64_t> ann_id;
  std::vector<int64_t> ann_image_id;
  std::vector<int64_t> ann_category_id;
  std::vector<BoxXywh> ann_bbox;
  std::vector<double> ann_area;
  std::vector<uint8_t> ann_iscrowd;
  std::vector<int32_t> ann_num_keypoints;
  std::vector<double> ann_keypoints;  // [N, K, 3] when K > 0; zeros for an annotation without
  std::vector<uint8_t> ann_fields;    // AnnotationField bits present

  size_t num_images() const { return image_ids.size(); }
  size_t num_annotations() const { return ann_id.size(); }
  void add_image(int64_t id, std::string file = "", int64_t width = 0, int64_t height = 0);
  void add_category(int64_t id, std::string name = "") {
    categories.push_back({id, std::move(name)});
  }
  // Appends one annotation with every field present; its keypoints must hold 3 * K values (K is
  // set by the first annotation that has keypoints, or beforehand). Throws DataError on a
  // mismatch.
  void add_annotation(const Annotation& annotation);
  // The same with the AnnotationField bits of the fields the file had (a `"keypoints": []`
  // counts as present, as pycocotools sees it).
  void add_annotation(const Annotation& annotation, uint8_t fields);
  void clear_images();
  // Drops every annotation; K goes back to `keypoints_per_instance` (0: unknown until the next
  // annotation with keypoints).
  void clear_annotations(int keypoints_per_instance = 0);
};

}  // namespace detrain::coco
