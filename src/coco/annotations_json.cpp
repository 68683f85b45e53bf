// COCO annotation files in one pass; see annotations_json.h. Deliberate differences from
// pycocotools: `iscrowd` must be 0/1/true/false, ids must be integral and NaN/Infinity literals
// are refused. Annotations may come before or after `images`: the table keeps both in file
// order and consumers join them by id.
#include "coco/annotations_json.h"

#include <algorithm>

#include "coco/json_fields.h"
#include "common/errors.h"

namespace detrain::coco {

namespace {

void parse_images(JsonCursor& cursor, const ReadOptions& options, AnnotationTable& table) {
  if (cursor.peek() != '[') cursor.fail_type("'images' must be an array");
  table.clear_images();
  Where where{"images", 0};
  std::string file;
  cursor.array([&] {
    const size_t at = cursor.offset();
    if (cursor.peek() != '{') cursor.fail_type(where.record() + " must be an object");
    bool has_id = false, has_file = false;
    int64_t id = 0, width = 0, height = 0;
    file.clear();
    cursor.object([&](std::string_view key) {
      if (key == "id") {
        id = read_id(cursor, where, "id");
        has_id = true;
      } else if (!options.image_files) {
        cursor.skip_value();
      } else if (key == "file_name") {
        if (cursor.peek() != '"') cursor.fail_type(where.field("file_name") + " must be a string");
        file = std::string(cursor.string());
        has_file = true;
      } else if (key == "width") {
        width = read_id(cursor, where, "width");
      } else if (key == "height") {
        height = read_id(cursor, where, "height");
      } else {
        cursor.skip_value();
      }
    });
    if (!has_id) cursor.fail_content(where.record() + " has no 'id'", at);
    if (options.image_files) {
      const auto named = [&] { return where.record() + " (id " + std::to_string(id) + ")"; };
      if (!has_file) cursor.fail_content(named() + " has no 'file_name'", at);
      if (width < 1 || height < 1)
        cursor.fail_content(named() + " needs positive 'width' and 'height'", at);
    }
    table.add_image(id, std::move(file), width, height);
    ++where.index;
  });
}

void parse_categories(JsonCursor& cursor, AnnotationTable& table) {
  if (cursor.peek() != '[') cursor.fail_type("'categories' must be an array");
  table.categories.clear();
  Where where{"categories", 0};
  cursor.array([&] {
    const size_t at = cursor.offset();
    if (cursor.peek() != '{') cursor.fail_type(where.record() + " must be an object");
    Category category;
    bool has_id = false;
    cursor.object([&](std::string_view key) {
      if (key == "id") {
        category.id = read_id(cursor, where, "id");
        has_id = true;
      } else if (key == "name" && cursor.peek() == '"') {
        category.name = std::string(cursor.string());
      } else {
        cursor.skip_value();
      }
    });
    if (!has_id) cursor.fail_content(where.record() + " has no 'id'", at);
    table.categories.push_back(std::move(category));
    ++where.index;
  });
}

// pycocotools reads only `num_keypoints == 0`: any other value (even 0.5) means "has
// keypoints". The sign is kept for the loader, which reads a negative count as absent.
int32_t keypoint_count(double n) {
  if (n == 0) return 0;
  if (n > 0) return std::max(1, static_cast<int32_t>(std::min(n, 1e9)));
  return std::min(-1, static_cast<int32_t>(std::max(n, -1e9)));
}

void parse_annotations(JsonCursor& cursor, const ReadOptions& options, AnnotationTable& table) {
  if (cursor.peek() != '[') cursor.fail_type("'annotations' must be an array");
  // A repeated key replaces the earlier value, as in Python's json.
  table.clear_annotations(std::max(options.keypoints, 0));
  const size_t k3 = 3 * static_cast<size_t>(std::max(options.keypoints, 0));
  Where where{"annotations", 0};
  Annotation a;
  cursor.array([&] {
    const size_t at = cursor.offset();
    if (cursor.peek() != '{') cursor.fail_type(where.record() + " must be an object");
    a.id = a.image_id = a.category_id = 0;
    a.bbox = {};
    a.area = 0;
    a.iscrowd = false;
    a.num_keypoints = 0;
    a.keypoints.clear();
    uint8_t fields = 0;
    bool has_id = false, has_image = false, has_category = false;
    size_t box_values = 4;
    size_t box_at = 0;
    cursor.object([&](std::string_view key) {
      if (key == "id") {
        a.id = read_id(cursor, where, "id");
        has_id = true;
      } else if (key == "image_id") {
        a.image_id = read_id(cursor, where, "image_id");
        has_image = true;
      } else if (key == "category_id") {
        a.category_id = read_id(cursor, where, "category_id");
        has_category = true;
      } else if (key == "bbox") {
        box_at = cursor.offset();
        box_values = read_box(cursor, where, a.bbox);
        fields |= kHasBbox;
      } else if (key == "area") {
        a.area = read_number(cursor, where, "area");
        fields |= kHasArea;
      } else if (key == "iscrowd") {
        const size_t crowd_at = cursor.offset();
        const char c = cursor.peek();
        const double crowd = c == 't' || c == 'f' ? (cursor.boolean() ? 1 : 0)
                                                  : read_number(cursor, where, "iscrowd");
        if (crowd != 0 && crowd != 1)
          cursor.fail_content(where.field("iscrowd") + " must be 0 or 1", crowd_at);
        a.iscrowd = crowd == 1;
        fields |= kHasIscrowd;
      } else if (key == "num_keypoints") {
        a.num_keypoints = keypoint_count(read_number(cursor, where, "num_keypoints"));
        fields |= kHasNumKeypoints;
      } else if (key == "keypoints" && options.keypoints != 0) {
        const size_t keypoints_at = cursor.offset();
        read_numbers(cursor, where, "keypoints", a.keypoints);
        if (k3 > 0 && a.keypoints.size() != k3)
          cursor.fail_content(where.field("keypoints") + " has " +
                                  std::to_string(a.keypoints.size()) +
                                  " values, the descriptor's kpt_shape needs " + std::to_string(k3),
                              keypoints_at);
        fields |= kHasKeypoints;
      } else {
        cursor.skip_value();
      }
    });
    if (!has_id) cursor.fail_content(where.record() + " has no 'id'", at);
    // Built only on failure: this runs once per annotation.
    const auto named = [&] { return where.record() + " (id " + std::to_string(a.id) + ")"; };
    if (options.require_bbox && (!has_image || !has_category || !(fields & kHasBbox)))
      cursor.fail_content(named() + " needs 'image_id', 'category_id' and 'bbox'", at);
    if (!has_image) cursor.fail_content(named() + " has no 'image_id'", at);
    if (!has_category) cursor.fail_content(named() + " has no 'category_id'", at);
    if ((fields & kHasBbox) && box_values != 4)
      cursor.fail_content("annotation id " + std::to_string(a.id) + ": 'bbox' has " +
                              std::to_string(box_values) + " values, expected [x, y, w, h]",
                          box_at);
    table.add_annotation(a, fields);
    ++where.index;
  });
}

}  // namespace

AnnotationTable read_annotations(JsonInput text, const std::string& source,
                                 const ReadOptions& options) {
  JsonCursor cursor(text, source);
  AnnotationTable table;
  table.source = source;
  table.keypoints_per_instance = std::max(options.keypoints, 0);
  const std::string kind = std::string("a COCO ") + options.kind + " file";
  if (cursor.peek() != '{')
    cursor.fail_type(kind + " must be a JSON object with " +
                     (options.require_categories ? "'images', 'annotations' and 'categories'"
                                                 : "'images' and 'annotations'"));
  bool has_images = false, has_categories = false;
  cursor.object([&](std::string_view key) {
    if (key == "images") {
      parse_images(cursor, options, table);
      has_images = true;
    } else if (key == "categories") {
      parse_categories(cursor, table);
      has_categories = true;
    } else if (key == "annotations") {
      parse_annotations(cursor, options, table);
    } else {
      cursor.skip_value();
    }
  });
  cursor.expect_end();
  if (!has_images) throw DataError(source + ": no 'images' list (" + kind + " needs one)");
  if (options.require_categories && !has_categories)
    throw DataError(source + ": no 'categories' list (" + kind + " needs one)");
  return table;
}

AnnotationTable load_annotations(const std::string& path, const ReadOptions& options) {
  return read_annotations(JsonFile(path), path, options);
}

}  // namespace detrain::coco
