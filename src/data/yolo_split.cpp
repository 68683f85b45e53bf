// YOLO split -> COCO annotation table; see yolo_split.h. The scan (every label file and image
// header) runs on all cores, each image into its own slot, so the table is the same for any
// number of threads. What the reference's labels.cache saves, the records cache saves here:
// the key covers every file's path, size and modification time, as its get_hash does.
#include "data/yolo_split.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "coco/table_cache.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/hash64.h"
#include "data/cache_files.h"
#include "data/image_check.h"
#include "data/scan_parallel.h"
#include "data/yolo_labels.h"

namespace detrain::data {
namespace fs = std::filesystem;

namespace {

constexpr size_t kWarningsShown = 20;
// The reference's verify_image_label: images of 9 px or less on a side are corrupt.
constexpr int32_t kMinImageSide = 10;
// The scan's warnings file: the table cache's name plus this.
constexpr const char* kWarningsSuffix = ".warnings";

struct ScannedImage {
  std::array<int32_t, 2> size{};  // width, height
  yolo::LabelFile label;
  std::string corrupt;  // why the image is dropped, "" when kept
};

ScannedImage scan_image(const std::string& image, const std::string& label,
                        const DatasetInfo& info) {
  ScannedImage s;
  const ImageFileCheck check = check_image_file(image);
  if (!check.ok()) {
    s.corrupt = image + ": " + check.problem + "; dropped";
    return s;
  }
  s.size = check.size;
  if (s.size[0] < kMinImageSide || s.size[1] < kMinImageSide) {
    s.corrupt = image + ": image size " + std::to_string(s.size[0]) + "x" +
                std::to_string(s.size[1]) + " is below 10 pixels; dropped";
    return s;
  }
  s.label = yolo::read_label_file(label, info.nc(), info.kpt_count, info.kpt_dims);
  if (!s.label.corrupt.empty()) s.corrupt = s.label.corrupt;
  return s;
}

// Path, size and modification time of every image and label file, and what they are read as.
coco::TableCacheKey cache_key(const std::vector<std::string>& images,
                              const std::vector<std::string>& labels, const DatasetInfo& info) {
  struct Stamp {
    int64_t size = -1, mtime_ns = 0;
  };
  std::vector<Stamp> stamps(2 * images.size());
  scan_parallel(images.size(), [&](size_t i) {
    for (size_t j = 0; j < 2; ++j) {
      struct stat st {};
      if (::stat((j == 0 ? images : labels)[i].c_str(), &st) == 0)
        stamps[2 * i + j] = {
            static_cast<int64_t>(st.st_size),
            static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
    }
  });
  Hash64 hash;
  coco::TableCacheKey key;
  for (size_t i = 0; i < images.size(); ++i) {
    hash.update(images[i].data(), images[i].size() + 1);  // with its terminator: unambiguous
    hash.update(labels[i].data(), labels[i].size() + 1);
    hash.update(&stamps[2 * i], 2 * sizeof(Stamp));
    key.file_mtime_ns =
        std::max({key.file_mtime_ns, stamps[2 * i].mtime_ns, stamps[2 * i + 1].mtime_ns});
  }
  key.file_size = images.size();
  key.file_hash = hash.digest();
  // v2: images checked whole (image_check.h), pose areas kPoseAreaPerBox * w * h.
  key.read_options = "yolo-labels-v2;nc=" + std::to_string(info.nc()) +
                     ";kpt=" + std::to_string(info.kpt_count) + "x" + std::to_string(info.kpt_dims);
  for (const auto& name : info.names) key.read_options += ";" + name;
  return key;
}

void add_rows(coco::AnnotationTable& table, int64_t image_id, const ScannedImage& s,
              const DatasetInfo& info, int64_t& next_annotation_id) {
  const double w = s.size[0], h = s.size[1];
  for (const yolo::LabelRow& row : s.label.rows) {
    coco::Annotation a;
    a.id = next_annotation_id++;
    a.image_id = image_id;
    a.category_id = row.cls;
    const auto& [cx, cy, bw, bh] = row.xywhn;
    a.bbox = {(cx - bw / 2) * w, (cy - bh / 2) * h, bw * w, bh * h};
    // No masks in labels: the box's area, or for pose sets COCO's segment area estimated from
    // it (yolo_split.h, docs/evaluator.md).
    a.area = a.bbox.w * a.bbox.h * (info.kpt_count > 0 ? kPoseAreaPerBox : 1.0);
    if (info.kpt_count > 0) {
      a.keypoints = yolo::keypoints_xyv(row, info.kpt_count, info.kpt_dims);
      for (size_t k = 0; k < a.keypoints.size(); k += 3) {
        a.keypoints[k] *= w;
        a.keypoints[k + 1] *= h;
        a.num_keypoints += a.keypoints[k + 2] > 0 ? 1 : 0;
      }
    }
    table.add_annotation(a);
  }
}

coco::AnnotationTable scan(const std::vector<std::string>& images,
                           const std::vector<std::string>& labels, const DatasetInfo& info,
                           YoloScanSummary& summary, std::vector<std::string>& warnings) {
  std::vector<ScannedImage> scanned(images.size());
  scan_parallel(images.size(),
                [&](size_t i) { scanned[i] = scan_image(images[i], labels[i], info); });

  coco::AnnotationTable table;
  table.keypoints_per_instance = static_cast<int>(info.kpt_count);
  for (int64_t c = 0; c < info.nc(); ++c) table.add_category(c, info.names[c]);
  std::vector<std::string> kept;
  for (size_t i = 0; i < images.size(); ++i)
    if (scanned[i].corrupt.empty()) kept.push_back(images[i]);
  const std::vector<int64_t> ids = yolo_image_ids(kept);
  int64_t next_annotation_id = 1;
  for (size_t i = 0, row = 0; i < images.size(); ++i) {
    const ScannedImage& s = scanned[i];
    for (const auto& w : s.label.warnings) warnings.push_back(w);
    if (!s.corrupt.empty()) {
      ++summary.corrupt;
      warnings.push_back(s.corrupt);
      continue;
    }
    const int64_t id = ids[row++];
    table.add_image(id, images[i], s.size[0], s.size[1]);
    add_rows(table, id, s, info, next_annotation_id);
    summary.missing_labels += s.label.missing ? 1 : 0;
    summary.duplicates_removed += s.label.duplicates_removed;
    summary.polygons += s.label.polygons;
  }
  return table;
}

void show_warnings(const std::vector<std::string>& warnings, const std::string& context) {
  for (size_t i = 0; i < std::min(warnings.size(), kWarningsShown); ++i)
    spdlog::warn("{}", warnings[i]);
  if (warnings.size() > kWarningsShown)
    spdlog::warn("{}: {} more label warnings not shown", context, warnings.size() - kWarningsShown);
}

// The scan's warnings and counts beside the table cache, so that a run reading the cache shows
// them again (the reference repeats its labels.cache messages on every run). The first line
// names the cache key; a file of another key is stale. Written before the table cache: a table
// cache without its current warnings file is never taken as a hit.
constexpr const char* kWarningsMagic = "detrain-yolo-scan-warnings v1";

std::string key_text(const coco::TableCacheKey& key) {
  Hash64 h;
  h.update(&key.file_size, sizeof(key.file_size));
  h.update(&key.file_mtime_ns, sizeof(key.file_mtime_ns));
  h.update(&key.file_hash, sizeof(key.file_hash));
  h.update(key.read_options.data(), key.read_options.size());
  return fmt::format("{:016x}", h.digest());
}

std::string encode_warnings(const coco::TableCacheKey& key, const YoloScanSummary& s,
                            const std::vector<std::string>& warnings) {
  std::string out = fmt::format("{} {}\n{} {} {} {}\n", kWarningsMagic, key_text(key), s.corrupt,
                                s.missing_labels, s.duplicates_removed, s.polygons);
  for (std::string w : warnings) {
    std::replace(w.begin(), w.end(), '\n', ' ');
    out += w + "\n";
  }
  return out;
}

// True when `text` is the warnings file of `key`; fills the counts and warnings.
bool decode_warnings(const std::string& text, const coco::TableCacheKey& key, YoloScanSummary& s,
                     std::vector<std::string>& warnings) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != std::string(kWarningsMagic) + " " + key_text(key))
    return false;
  if (!std::getline(in, line)) return false;
  std::istringstream counts(line);
  if (!(counts >> s.corrupt >> s.missing_labels >> s.duplicates_removed >> s.polygons))
    return false;
  while (std::getline(in, line)) warnings.push_back(line);
  return true;
}

coco::AnnotationTable read_cached(const std::string& cache_file, const coco::TableCacheKey& key,
                                  YoloScanSummary& summary, std::vector<std::string>& warnings,
                                  std::string* why) {
  coco::AnnotationTable table;
  struct stat st {};
  if (::stat(cache_file.c_str(), &st) != 0) {
    *why = "absent";
    return table;
  }
  std::string warnings_text;
  try {
    warnings_text = read_file(cache_file + kWarningsSuffix);
  } catch (const IoError&) {  // absent or unreadable: the cache is taken as stale below
  }
  if (!decode_warnings(warnings_text, key, summary, warnings)) {
    *why = "without its current scan warnings";
  } else {
    try {
      const std::string bytes = read_file(cache_file);
      if (!coco::decode_table_cache(bytes.data(), bytes.size(), key, &table, why)) table = {};
    } catch (const IoError& e) {
      *why = std::string("unreadable: ") + e.what();
    }
  }
  if (!why->empty()) {
    warnings.clear();
    summary = {};
  }
  return table;
}

}  // namespace

std::vector<int64_t> yolo_image_ids(const std::vector<std::string>& image_paths) {
  std::vector<int64_t> ids;
  std::set<int64_t> seen;
  for (const std::string& path : image_paths) {
    const std::string stem = fs::path(path).stem().string();
    int64_t id = 0;
    const auto [end, ec] = std::from_chars(stem.data(), stem.data() + stem.size(), id);
    const bool number = !stem.empty() && ec == std::errc() && end == stem.data() + stem.size() &&
                        stem.front() != '-';
    if (!number || !seen.insert(id).second) {
      ids.clear();
      for (size_t i = 0; i < image_paths.size(); ++i) ids.push_back(static_cast<int64_t>(i) + 1);
      return ids;
    }
    ids.push_back(id);
  }
  return ids;
}

coco::AnnotationTable read_yolo_split(const DatasetInfo& info, const std::string& split,
                                      bool cache_records, YoloScanSummary* summary_out) {
  const SplitFiles& files = info.split(split);
  const std::string context = info.yaml_path + " (" + split + ")";
  const std::vector<std::string> images = yolo::list_split_images(files.yolo_sources, context);
  std::vector<std::string> labels(images.size());
  for (size_t i = 0; i < images.size(); ++i) labels[i] = yolo::label_path_for_image(images[i]);

  YoloScanSummary summary;
  std::vector<std::string> warnings;  // one line each: label rows, dropped images
  coco::AnnotationTable table;
  bool from_cache = false;
  coco::TableCacheKey key;
  const std::string cache_file = cache_file_for(files.annotations, "records-yolo");
  if (cache_records) {
    key = cache_key(images, labels, info);
    std::string why;
    table = read_cached(cache_file, key, summary, warnings, &why);
    from_cache = why.empty();
    if (from_cache)
      summary.cache = "read";
    else if (why != "absent")
      spdlog::info("{}: records cache {} was {}; rewritten", context, cache_file, why);
  }
  if (!from_cache) {
    table = scan(images, labels, info, summary, warnings);
    if (cache_records) {
      try {
        std::error_code ec;
        fs::create_directories(fs::path(cache_file).parent_path(), ec);
        write_file_atomic(cache_file + kWarningsSuffix, encode_warnings(key, summary, warnings));
        write_file_atomic(cache_file, coco::encode_table_cache(key, table));
        summary.cache = "written";
      } catch (const IoError& e) {
        summary.cache = std::string("not written: ") + e.what();
        spdlog::warn("{}: records cache not written ({}); the next run scans the labels again",
                     context, e.what());
      }
    }
  }
  show_warnings(warnings, context);
  table.source = context;
  summary.images = static_cast<int64_t>(table.num_images());
  std::vector<uint8_t> labelled(table.num_images(), 0);
  {
    std::unordered_map<int64_t, size_t> row_of;
    for (size_t i = 0; i < table.num_images(); ++i) row_of[table.image_ids[i]] = i;
    for (const int64_t id : table.ann_image_id) labelled[row_of[id]] = 1;
  }
  summary.backgrounds = std::count(labelled.begin(), labelled.end(), uint8_t{0});
  if (from_cache && summary.corrupt == 0)
    spdlog::debug("{}: {} images read from the records cache {}", context, summary.images,
                  cache_file);
  else
    spdlog::info("{}: {} images, {} backgrounds ({} without a label file), {} corrupt dropped{}{}",
                 context, summary.images, summary.backgrounds, summary.missing_labels,
                 summary.corrupt,
                 summary.duplicates_removed > 0
                     ? ", " + std::to_string(summary.duplicates_removed) + " duplicate rows removed"
                     : "",
                 summary.polygons > 0
                     ? ", " + std::to_string(summary.polygons) + " polygons reduced to boxes"
                     : "");
  if (table.num_images() == 0)
    throw DataError(context + ": every image was dropped as corrupt (see the warnings above)");
  if (summary_out) *summary_out = summary;
  return table;
}

}  // namespace detrain::data
