// COCO JSON -> ImageRecord; see coco_records.h. Annotations may come before or after `images`
// in the file, so they are collected flat first and attached to their images at the end.
#include "data/coco_records.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <unordered_map>

#include "common/errors.h"
#include "common/json_cursor.h"

namespace detrain::data {
namespace fs = std::filesystem;

namespace {

constexpr size_t kMissingExamples = 5;

struct RawImage {
  int64_t id = 0;
  std::string file_name;
  int64_t width = 0, height = 0;
};

struct RawAnnotation {
  int64_t id = 0;
  int64_t image_id = 0;
  int64_t category_id = 0;
  double box_xywh[4] = {0, 0, 0, 0};
  bool crowd = false;
  bool has_keypoints = false;  // num_keypoints > 0 (or labelled points when the field is absent)
  size_t keypoint_offset = 0;  // into the flat keypoint store, K * 3 values
};

double read_number(JsonCursor& c, const std::string& where, const char* field) {
  return detrain::read_number(c, [&] { return where + " '" + field + "'"; });
}

int64_t read_integer(JsonCursor& c, const std::string& where, const char* field) {
  return detrain::read_integer(c, field, [&] { return where + " '" + field + "'"; });
}

std::string image_where(size_t i) { return "images[" + std::to_string(i) + "]"; }
std::string ann_where(size_t i) { return "annotations[" + std::to_string(i) + "]"; }

void parse_images(JsonCursor& c, std::vector<RawImage>& out) {
  if (c.peek() != '[') c.fail_type("'images' must be an array");
  out.clear();
  c.array([&] {
    const size_t at = c.offset();
    const std::string where = image_where(out.size());
    if (c.peek() != '{') c.fail_type(where + " must be an object");
    RawImage img;
    bool has_id = false, has_file = false;
    c.object([&](std::string_view key) {
      if (key == "id") {
        img.id = read_integer(c, where, "id");
        has_id = true;
      } else if (key == "file_name") {
        if (c.peek() != '"') c.fail_type(where + " 'file_name' must be a string");
        img.file_name = std::string(c.string());
        has_file = true;
      } else if (key == "width") {
        img.width = read_integer(c, where, "width");
      } else if (key == "height") {
        img.height = read_integer(c, where, "height");
      } else {
        c.skip_value();
      }
    });
    if (!has_id) c.fail_content(where + " has no 'id'", at);
    if (!has_file)
      c.fail_content(where + " (id " + std::to_string(img.id) + ") has no 'file_name'", at);
    if (img.width < 1 || img.height < 1)
      c.fail_content(
          where + " (id " + std::to_string(img.id) + ") needs positive 'width' and 'height'", at);
    out.push_back(std::move(img));
  });
}

void parse_annotations(JsonCursor& c, int64_t kpt_count, std::vector<RawAnnotation>& out,
                       std::vector<float>& keypoints) {
  if (c.peek() != '[') c.fail_type("'annotations' must be an array");
  out.clear();
  keypoints.clear();
  const size_t k3 = static_cast<size_t>(kpt_count) * 3;
  std::vector<double> values;
  c.array([&] {
    const size_t at = c.offset();
    const std::string where = ann_where(out.size());
    if (c.peek() != '{') c.fail_type(where + " must be an object");
    RawAnnotation a;
    bool has_id = false, has_image = false, has_category = false, has_box = false;
    double num_keypoints = -1;
    values.clear();
    c.object([&](std::string_view key) {
      if (key == "id") {
        a.id = read_integer(c, where, "id");
        has_id = true;
      } else if (key == "image_id") {
        a.image_id = read_integer(c, where, "image_id");
        has_image = true;
      } else if (key == "category_id") {
        a.category_id = read_integer(c, where, "category_id");
        has_category = true;
      } else if (key == "bbox") {
        const size_t box_at = c.offset();
        if (c.peek() != '[') c.fail_type(where + " 'bbox' must be an array [x, y, w, h]");
        size_t n = 0;
        c.array([&] {
          const double v = read_number(c, where, "bbox");
          if (n < 4) a.box_xywh[n] = v;
          ++n;
        });
        if (n != 4)
          c.fail_content(where + " 'bbox' has " + std::to_string(n) + " values, expected 4",
                         box_at);
        has_box = true;
      } else if (key == "iscrowd") {
        const char ch = c.peek();
        a.crowd = ch == 't' || ch == 'f' ? c.boolean() : read_number(c, where, "iscrowd") != 0;
      } else if (key == "num_keypoints") {
        num_keypoints = read_number(c, where, "num_keypoints");
      } else if (key == "keypoints" && k3 > 0) {
        const size_t kp_at = c.offset();
        if (c.peek() != '[') c.fail_type(where + " 'keypoints' must be an array");
        c.array([&] { values.push_back(read_number(c, where, "keypoints")); });
        if (values.size() != k3)
          c.fail_content(where + " 'keypoints' has " + std::to_string(values.size()) +
                             " values, the descriptor's kpt_shape needs " + std::to_string(k3),
                         kp_at);
      } else {
        c.skip_value();
      }
    });
    if (!has_id) c.fail_content(where + " has no 'id'", at);
    if (!has_image || !has_category || !has_box)
      c.fail_content(
          where + " (id " + std::to_string(a.id) + ") needs 'image_id', 'category_id' and 'bbox'",
          at);
    if (k3 > 0) {
      a.keypoint_offset = keypoints.size();
      if (values.empty()) values.assign(k3, 0.0);
      bool labelled = false;
      for (size_t j = 0; j < k3; ++j) {
        keypoints.push_back(static_cast<float>(values[j]));
        if (j % 3 == 2 && values[j] > 0) labelled = true;
      }
      a.has_keypoints = num_keypoints < 0 ? labelled : num_keypoints > 0;
    }
    out.push_back(a);
  });
}

Records build_records(const std::vector<RawImage>& images,
                      const std::vector<RawAnnotation>& annotations,
                      const std::vector<float>& keypoints, const std::string& source,
                      const DatasetInfo& info, const SplitFiles& files,
                      const RecordOptions& options) {
  Records result;
  auto& stats = result.stats;
  std::unordered_map<int64_t, size_t> row_of_image;
  row_of_image.reserve(images.size() * 2);
  std::vector<ImageRecord> records(images.size());
  std::vector<uint8_t> has_keypoints(images.size(), 0);
  for (size_t i = 0; i < images.size(); ++i) {
    if (!row_of_image.emplace(images[i].id, i).second)
      throw DataError(source + ": image id " + std::to_string(images[i].id) +
                      " appears twice in 'images' (ids must be unique)");
    auto& r = records[i];
    r.file = (fs::path(files.images) / images[i].file_name).lexically_normal().string();
    r.image_id = images[i].id;
    r.width = static_cast<int32_t>(images[i].width);
    r.height = static_cast<int32_t>(images[i].height);
  }

  const size_t k3 = static_cast<size_t>(info.kpt_count) * 3;
  stats.annotations = static_cast<int64_t>(annotations.size());
  for (const auto& a : annotations) {
    const auto row = row_of_image.find(a.image_id);
    if (row == row_of_image.end())
      throw DataError(source + ": annotation id " + std::to_string(a.id) + " names image id " +
                      std::to_string(a.image_id) + ", which is not in 'images'");
    const int64_t cls = info.class_index(a.category_id);
    if (cls < 0)
      throw DataError(source + ": annotation id " + std::to_string(a.id) + " (image id " +
                      std::to_string(a.image_id) + ") has category id " +
                      std::to_string(a.category_id) + ", which " + info.yaml_path +
                      " does not list under 'classes'; add it there or fix the annotation");
    auto& r = records[row->second];
    const float w = static_cast<float>(r.width), h = static_cast<float>(r.height);
    const double* b = a.box_xywh;
    BoxXyxy box = {static_cast<float>(b[0]), static_cast<float>(b[1]),
                   static_cast<float>(b[0] + b[2]), static_cast<float>(b[1] + b[3])};
    const BoxXyxy clipped = {std::clamp(box[0], 0.f, w), std::clamp(box[1], 0.f, h),
                             std::clamp(box[2], 0.f, w), std::clamp(box[3], 0.f, h)};
    if (clipped != box && b[2] > 0 && b[3] > 0) ++stats.clipped;
    if (a.crowd) {
      ++stats.crowd;
      r.crowd_boxes_xyxy_px.push_back(clipped);
      continue;
    }
    if (!(clipped[2] > clipped[0]) || !(clipped[3] > clipped[1])) {
      ++stats.dropped_empty;
      continue;
    }
    r.boxes_xyxy_px.push_back(clipped);
    r.classes.push_back(options.single_cls ? 0 : static_cast<int32_t>(cls));
    if (k3 > 0) {
      r.keypoints_px.insert(r.keypoints_px.end(), keypoints.begin() + a.keypoint_offset,
                            keypoints.begin() + a.keypoint_offset + k3);
      if (a.has_keypoints) has_keypoints[row->second] = 1;
    }
  }

  std::error_code ec;
  for (size_t i = 0; i < records.size(); ++i) {
    if (info.keep_images == KeepImages::kWithKeypoints && !has_keypoints[i]) {
      ++stats.images_filtered;
      continue;
    }
    if (options.check_files && !fs::is_regular_file(records[i].file, ec)) {
      ++stats.images_missing;
      if (stats.missing_examples.size() < kMissingExamples)
        stats.missing_examples.push_back(records[i].file);
      continue;
    }
    result.images.push_back(std::move(records[i]));
  }
  if (stats.images_missing > 0) {
    std::string list;
    for (const auto& p : stats.missing_examples) list += (list.empty() ? "" : ", ") + p;
    if (options.skip_missing) {
      spdlog::warn("{}: skipping {} missing image file(s): {}{} (data.skip_missing=true)", source,
                   stats.images_missing, list,
                   stats.images_missing > int64_t(kMissingExamples) ? ", ..." : "");
    } else {
      throw DataError(source + ": " + std::to_string(stats.images_missing) +
                      " image file(s) missing (" + list +
                      (stats.images_missing > int64_t(kMissingExamples) ? ", ..." : "") +
                      "); fix the data root or set data.skip_missing=true to skip them");
    }
  }
  if (options.fraction < 1.0) {
    const auto keep = static_cast<size_t>(std::max(
        1.0, std::nearbyint(options.fraction * static_cast<double>(result.images.size()))));
    if (keep < result.images.size()) result.images.resize(keep);
  }
  stats.images = static_cast<int64_t>(result.images.size());
  for (const auto& r : result.images) stats.backgrounds += r.boxes_xyxy_px.empty() ? 1 : 0;
  return result;
}

Records parse_input(JsonInput input, const std::string& source, const DatasetInfo& info,
                    const SplitFiles& files, const RecordOptions& options) {
  JsonCursor c(input, source);
  if (c.peek() != '{')
    c.fail_type("a COCO annotation file must be a JSON object with 'images' and 'annotations'");
  std::vector<RawImage> images;
  std::vector<RawAnnotation> annotations;
  std::vector<float> keypoints;
  bool has_images = false;
  c.object([&](std::string_view key) {
    if (key == "images") {
      parse_images(c, images);
      has_images = true;
    } else if (key == "annotations") {
      parse_annotations(c, info.kpt_count, annotations, keypoints);
    } else {
      c.skip_value();
    }
  });
  c.expect_end();
  if (!has_images)
    throw DataError(source + ": no 'images' list (a COCO annotation file needs one)");
  return build_records(images, annotations, keypoints, source, info, files, options);
}

}  // namespace

RecordOptions RecordOptions::from(const config::DataOptions& data, bool train) {
  RecordOptions o;
  o.skip_missing = data.skip_missing;
  o.single_cls = data.single_cls;
  o.fraction = train ? data.fraction : 1.0;
  return o;
}

Records load_records(const DatasetInfo& info, const std::string& split,
                     const RecordOptions& options) {
  const SplitFiles& files = info.split(split);
  std::error_code ec;
  if (!fs::is_regular_file(files.annotations, ec))
    throw DataError("annotation file '" + files.annotations + "' of " + info.yaml_path + " (" +
                    split +
                    ") not found; check the descriptor's path (or DETRAIN_DATA / data.root)");
  return parse_input(JsonFile(files.annotations), files.annotations, info, files, options);
}

Records parse_records(const std::string& json_text, const std::string& source,
                      const DatasetInfo& info, const SplitFiles& files,
                      const RecordOptions& options) {
  return parse_input(json_text, source, info, files, options);
}

}  // namespace detrain::data
