// Annotation table -> ImageRecord; see coco_records.h. Annotations may come before or after
// `images` in the file, so the table keeps both in file order and they are joined here by id.
#include "data/coco_records.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <unordered_map>

#include "common/errors.h"

namespace detrain::data {
namespace fs = std::filesystem;

namespace {

constexpr size_t kMissingExamples = 5;

// The loader's rule: `num_keypoints` decides when present and not negative, else whether any
// point is labelled (v > 0).
bool has_labelled_keypoints(const coco::AnnotationTable& t, size_t i, size_t k3) {
  if ((t.ann_fields[i] & coco::kHasNumKeypoints) && t.ann_num_keypoints[i] >= 0)
    return t.ann_num_keypoints[i] > 0;
  const double* v = t.ann_keypoints.data() + i * k3;
  for (size_t j = 2; j < k3; j += 3)
    if (v[j] > 0) return true;
  return false;
}

}  // namespace

Records build_records(const coco::AnnotationTable& t, const DatasetInfo& info,
                      const SplitFiles& files, const RecordOptions& options) {
  const size_t k3 = static_cast<size_t>(info.kpt_count) * 3;
  if (t.image_files.size() != t.num_images() ||
      std::any_of(t.image_widths.begin(), t.image_widths.end(), [](int64_t w) { return w < 1; }))
    throw std::invalid_argument(t.source +
                                ": build_records needs image file names and sizes (read the file "
                                "with record_read_options)");
  if (t.keypoints_per_instance != info.kpt_count)
    throw std::invalid_argument(
        t.source + ": the table has " + std::to_string(t.keypoints_per_instance) +
        " keypoints per annotation, the descriptor " + std::to_string(info.kpt_count));
  const std::string& source = t.source;
  Records result;
  auto& stats = result.stats;
  std::unordered_map<int64_t, size_t> row_of_image;
  row_of_image.reserve(t.num_images() * 2);
  std::vector<ImageRecord> records(t.num_images());
  std::vector<uint8_t> has_keypoints(t.num_images(), 0);
  for (size_t i = 0; i < t.num_images(); ++i) {
    if (!row_of_image.emplace(t.image_ids[i], i).second)
      throw DataError(source + ": image id " + std::to_string(t.image_ids[i]) +
                      " appears twice in 'images' (ids must be unique)");
    auto& r = records[i];
    r.file = (fs::path(files.images) / t.image_files[i]).lexically_normal().string();
    r.image_id = t.image_ids[i];
    r.width = static_cast<int32_t>(t.image_widths[i]);
    r.height = static_cast<int32_t>(t.image_heights[i]);
  }

  stats.annotations = static_cast<int64_t>(t.num_annotations());
  for (size_t i = 0; i < t.num_annotations(); ++i) {
    const int64_t id = t.ann_id[i], image_id = t.ann_image_id[i];
    const auto row = row_of_image.find(image_id);
    if (row == row_of_image.end())
      throw DataError(source + ": annotation id " + std::to_string(id) + " names image id " +
                      std::to_string(image_id) + ", which is not in 'images'");
    const int64_t cls = info.class_index(t.ann_category_id[i]);
    if (cls < 0)
      throw DataError(source + ": annotation id " + std::to_string(id) + " (image id " +
                      std::to_string(image_id) + ") has category id " +
                      std::to_string(t.ann_category_id[i]) + ", which " + info.yaml_path +
                      " does not list under 'classes'; add it there or fix the annotation");
    auto& r = records[row->second];
    const float w = static_cast<float>(r.width), h = static_cast<float>(r.height);
    const coco::BoxXywh& b = t.ann_bbox[i];
    BoxXyxy box = {static_cast<float>(b.x), static_cast<float>(b.y), static_cast<float>(b.x + b.w),
                   static_cast<float>(b.y + b.h)};
    const BoxXyxy clipped = {std::clamp(box[0], 0.f, w), std::clamp(box[1], 0.f, h),
                             std::clamp(box[2], 0.f, w), std::clamp(box[3], 0.f, h)};
    if (clipped != box && b.w > 0 && b.h > 0) ++stats.clipped;
    if (t.ann_iscrowd[i]) {
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
      const double* points = t.ann_keypoints.data() + i * k3;
      for (size_t j = 0; j < k3; ++j) r.keypoints_px.push_back(static_cast<float>(points[j]));
      if (has_labelled_keypoints(t, i, k3)) has_keypoints[row->second] = 1;
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

RecordOptions RecordOptions::from(const config::DataOptions& data, bool train) {
  RecordOptions o;
  o.skip_missing = data.skip_missing;
  o.single_cls = data.single_cls;
  o.fraction = train ? data.fraction : 1.0;
  return o;
}

coco::AnnotationTable read_split(const DatasetInfo& info, const std::string& split,
                                 const coco::ReadOptions& read) {
  const SplitFiles& files = info.split(split);
  std::error_code ec;
  if (!fs::is_regular_file(files.annotations, ec))
    throw DataError("annotation file '" + files.annotations + "' of " + info.yaml_path + " (" +
                    split +
                    ") not found; check the descriptor's path (or DETRAIN_DATA / data.root)");
  return coco::load_annotations(files.annotations, read);
}

Records load_records(const DatasetInfo& info, const std::string& split,
                     const RecordOptions& options) {
  return build_records(read_split(info, split, record_read_options(info)), info, info.split(split),
                       options);
}

Records parse_records(const std::string& json_text, const std::string& source,
                      const DatasetInfo& info, const SplitFiles& files,
                      const RecordOptions& options) {
  return build_records(coco::read_annotations(json_text, source, record_read_options(info)), info,
                       files, options);
}

coco::ReadOptions record_read_options(const DatasetInfo& info) {
  coco::ReadOptions o;
  o.image_files = true;
  o.require_bbox = true;
  o.keypoints = static_cast<int>(info.kpt_count);
  return o;
}

}  // namespace detrain::data
