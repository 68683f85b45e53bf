// Annotation table -> ImageRecord; see coco_records.h. Annotations may come before or after
// `images` in the file, so the table keeps both in file order and they are joined here by id.
#include "data/coco_records.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <unordered_map>

#include "coco/table_cache.h"
#include "common/errors.h"
#include "common/timer.h"
#include "data/cache_files.h"
#include "data/split_image_check.h"
#include "data/yolo_split.h"

namespace detrain::data {
namespace fs = std::filesystem;

namespace {

constexpr size_t kMissingExamples = 5;
constexpr size_t kWarningsShown = 20;

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

// Row of each image id of a table. Ids within [0, 4 n + 1024) index an array; others (sparse or
// negative ids) go through a hash map. Duplicate ids are a DataError either way.
class RowOfImage {
 public:
  explicit RowOfImage(const coco::AnnotationTable& t) {
    const size_t n = t.num_images();
    const int64_t dense_limit = static_cast<int64_t>(4 * n + 1024);
    const bool dense = std::all_of(t.image_ids.begin(), t.image_ids.end(),
                                   [&](int64_t id) { return id >= 0 && id < dense_limit; });
    if (dense) {
      int64_t top = 0;
      for (const int64_t id : t.image_ids) top = std::max(top, id);
      dense_.assign(static_cast<size_t>(top) + 1, -1);
    } else {
      sparse_.reserve(2 * n);
    }
    for (size_t i = 0; i < n; ++i) {
      const int64_t id = t.image_ids[i];
      const bool fresh = dense ? dense_[static_cast<size_t>(id)] < 0
                               : sparse_.emplace(id, static_cast<int64_t>(i)).second;
      if (!fresh)
        throw DataError(t.source + ": image id " + std::to_string(id) +
                        " appears twice in 'images' (ids must be unique)");
      if (dense) dense_[static_cast<size_t>(id)] = static_cast<int64_t>(i);
    }
  }
  // The row, or -1 when no image has this id.
  int64_t find(int64_t id) const {
    if (!dense_.empty() || sparse_.empty()) {
      return id >= 0 && static_cast<size_t>(id) < dense_.size() ? dense_[static_cast<size_t>(id)]
                                                                : -1;
    }
    const auto it = sparse_.find(id);
    return it == sparse_.end() ? -1 : it->second;
  }

 private:
  std::vector<int64_t> dense_;
  std::unordered_map<int64_t, int64_t> sparse_;
};

// `dir`/`name` as lexically_normal would give it, without its cost when the name is plain (no
// "." or ".." components, no doubled or leading slash).
std::string image_path(const std::string& dir, const std::string& name) {
  const bool plain = !name.empty() && name[0] != '/' && name[0] != '.' &&
                     name.find("/.") == std::string::npos && name.find("//") == std::string::npos &&
                     name.back() != '/';
  if (!plain || dir.empty() || dir == ".")
    return (fs::path(dir) / name).lexically_normal().string();
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

// Is a path a regular file? Paths inside `dir` are looked up from an open handle of it, one
// name each instead of the whole path (COCO-train: 118k lookups at every start).
class FileCheck {
 public:
  explicit FileCheck(const std::string& dir)
      : dir_(dir), fd_(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)) {}
  ~FileCheck() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileCheck(const FileCheck&) = delete;
  FileCheck& operator=(const FileCheck&) = delete;
  bool regular_file(const std::string& path) const {
    struct stat st {};
    const bool inside = fd_ >= 0 && path.size() > dir_.size() + 1 &&
                        path.compare(0, dir_.size(), dir_) == 0 && path[dir_.size()] == '/';
    const int rc =
        inside ? ::fstatat(fd_, path.c_str() + dir_.size() + 1, &st, 0) : ::stat(path.c_str(), &st);
    return rc == 0 && S_ISREG(st.st_mode);
  }

 private:
  std::string dir_;
  int fd_;
};

// The table from the annotation file's records cache, made or refreshed as needed. The cache is
// an optimisation: when it cannot be written the run goes on and says why once.
coco::AnnotationTable read_through_cache(const std::string& annotations,
                                         const coco::ReadOptions& read, std::string* cache_use) {
  // A strict read (the evaluator's categories too) keeps its own file, so validation and a
  // plain scan of the same split do not overwrite each other's cache.
  const std::string cache =
      cache_file_for(annotations, read.require_categories ? "records-eval" : "records");
  std::error_code ec;
  fs::create_directories(fs::path(cache).parent_path(), ec);
  coco::TableCacheUse use;
  coco::AnnotationTable table = coco::load_annotations_cached(annotations, read, cache, &use);
  if (use.hit)
    spdlog::debug("{}: records read from the cache {}", annotations, cache);
  else if (!use.write_error.empty())
    spdlog::warn("{}: records cache not written ({}); the next run parses the file again",
                 annotations, use.write_error);
  else if (use.miss != "absent")
    spdlog::info("{}: records cache {} was {}; rewritten", annotations, cache, use.miss);
  if (cache_use)
    *cache_use = use.hit ? "read" : use.written ? "written" : "not written: " + use.write_error;
  return table;
}

// Drops the images that are not whole (split_image_check.h) with one warning each (the first
// kWarningsShown, then a count), on every run: the answers may come from the check's cache.
void drop_broken_images(std::vector<ImageRecord>& images, const SplitFiles& files,
                        const RecordOptions& options, RecordStats& stats) {
  std::vector<std::string> paths;
  paths.reserve(images.size());
  for (const auto& r : images) paths.push_back(r.file);
  const SplitImageCheck check = check_split_images(
      paths, options.cache_records ? cache_file_for(files.annotations, "image-check") : "");
  if (check.cache.rfind("not written", 0) == 0)
    spdlog::warn("{}: image check cache {}; the next run checks the images again",
                 files.annotations, check.cache);
  size_t kept = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    if (check.problems[i].empty()) {
      if (kept != i) images[kept] = std::move(images[i]);
      ++kept;
      continue;
    }
    if (stats.images_corrupt++ < static_cast<int64_t>(kWarningsShown))
      spdlog::warn("{}: {}; dropped", images[i].file, check.problems[i]);
  }
  if (stats.images_corrupt > static_cast<int64_t>(kWarningsShown))
    spdlog::warn("{}: {} more broken images dropped", files.annotations,
                 stats.images_corrupt - static_cast<int64_t>(kWarningsShown));
  images.resize(kept);
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
  // Image id -> row: a plain array when the ids are dense enough (COCO's are), else a hash map.
  const RowOfImage row_of_image(t);
  std::vector<ImageRecord> records(t.num_images());
  std::vector<uint8_t> has_keypoints(t.num_images(), 0);
  const std::string images_dir = fs::path(files.images).lexically_normal().string();
  for (size_t i = 0; i < t.num_images(); ++i) {
    auto& r = records[i];
    r.file = image_path(images_dir, t.image_files[i]);
    r.image_id = t.image_ids[i];
    r.width = static_cast<int32_t>(t.image_widths[i]);
    r.height = static_cast<int32_t>(t.image_heights[i]);
  }

  // Each annotation's row once, then every record's lists sized before they are filled (no
  // regrowth over COCO-train's 860k annotations in random image order).
  stats.annotations = static_cast<int64_t>(t.num_annotations());
  std::vector<uint32_t> row_of_annotation(t.num_annotations());
  {
    std::vector<uint32_t> boxes(records.size(), 0), crowd(records.size(), 0);
    for (size_t i = 0; i < t.num_annotations(); ++i) {
      const int64_t row = row_of_image.find(t.ann_image_id[i]);
      if (row < 0)
        throw DataError(source + ": annotation id " + std::to_string(t.ann_id[i]) +
                        " names image id " + std::to_string(t.ann_image_id[i]) +
                        ", which is not in 'images'");
      row_of_annotation[i] = static_cast<uint32_t>(row);
      ++(t.ann_iscrowd[i] ? crowd : boxes)[static_cast<size_t>(row)];
    }
    for (size_t i = 0; i < records.size(); ++i) {
      records[i].boxes_xyxy_px.reserve(boxes[i]);
      records[i].classes.reserve(boxes[i]);
      records[i].keypoints_px.reserve(boxes[i] * k3);
      records[i].crowd_boxes_xyxy_px.reserve(crowd[i]);
    }
  }
  for (size_t i = 0; i < t.num_annotations(); ++i) {
    const int64_t id = t.ann_id[i], image_id = t.ann_image_id[i];
    const size_t row = row_of_annotation[i];
    const int64_t cls = info.class_index(t.ann_category_id[i]);
    if (cls < 0)
      throw DataError(source + ": annotation id " + std::to_string(id) + " (image id " +
                      std::to_string(image_id) + ") has category id " +
                      std::to_string(t.ann_category_id[i]) + ", which " + info.yaml_path +
                      " does not list under 'classes'; add it there or fix the annotation");
    auto& r = records[row];
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
      if (has_labelled_keypoints(t, i, k3)) has_keypoints[row] = 1;
    }
  }

  std::error_code ec;
  if (options.check_files && !images_dir.empty() && !fs::is_directory(images_dir, ec))
    throw DataError(source + ": the image folder '" + images_dir + "' of " + info.yaml_path +
                    " does not exist; check the descriptor's path and images keys (or " +
                    "DETRAIN_DATA / data.root)");
  const FileCheck files_there(images_dir);
  for (size_t i = 0; i < records.size(); ++i) {
    if (info.keep_images == KeepImages::kWithKeypoints && !has_keypoints[i]) {
      ++stats.images_filtered;
      continue;
    }
    if (options.check_files && !files_there.regular_file(records[i].file)) {
      ++stats.images_missing;
      if (stats.missing_examples.size() < kMissingExamples)
        stats.missing_examples.push_back(records[i].file);
      continue;
    }
    result.images.push_back(std::move(records[i]));
  }
  // A YOLO split's scan has checked its images already (yolo_split.h).
  if (options.check_files && info.format != DataFormat::kYolo)
    drop_broken_images(result.images, files, options, stats);
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
  o.cache_records = data.cache_records;
  return o;
}

coco::AnnotationTable read_split(const DatasetInfo& info, const std::string& split,
                                 const coco::ReadOptions& read, bool cache_records,
                                 std::string* cache_use) {
  if (info.format == DataFormat::kYolo) {
    YoloScanSummary summary;
    coco::AnnotationTable table = read_yolo_split(info, split, cache_records, &summary);
    if (cache_use) *cache_use = summary.cache;
    return table;
  }
  const SplitFiles& files = info.split(split);
  std::error_code ec;
  if (!fs::is_regular_file(files.annotations, ec))
    throw DataError("annotation file '" + files.annotations + "' of " + info.yaml_path + " (" +
                    split +
                    ") not found; check the descriptor's path (or DETRAIN_DATA / data.root)");
  if (!cache_records) return coco::load_annotations(files.annotations, read);
  return read_through_cache(files.annotations, read, cache_use);
}

Records load_records(const DatasetInfo& info, const std::string& split,
                     const RecordOptions& options) {
  Stopwatch watch;
  std::string cache_use;
  Records records = build_records(
      read_split(info, split, record_read_options(info), options.cache_records, &cache_use), info,
      info.split(split), options);
  records.stats.read_seconds = watch.seconds();
  records.stats.records_cache = cache_use;
  return records;
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
