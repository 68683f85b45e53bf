// Data sets: detrain's descriptors (data/*.yaml, COCO JSON read directly: classes carry their
// COCO ids) and Ultralytics data YAMLs of YOLO txt labels (data/yolo_split.h builds the same
// annotation table from the labels; category id = class index). Either gives where images and
// annotations live, class names and the contiguous index <-> category id map, keypoint shape,
// flip_idx, OKS sigmas, skeleton.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace detrain::data {

// One split's files, absolute paths.
struct SplitFiles {
  // COCO JSON (instances or person keypoints); for a YOLO split its first source (folder or .txt
  // list), which names the split's cache files.
  std::string annotations;
  std::string images;  // directory that holds images[i].file_name ("" for a YOLO split)
  // YOLO splits: the data YAML's sources (image folders, .txt lists, image files).
  std::vector<std::string> yolo_sources;
};

enum class DataFormat {
  kCoco,  // detrain descriptor + COCO JSON
  kYolo,  // Ultralytics data YAML + YOLO txt labels
};

// Which images of an annotation file become records.
enum class KeepImages {
  kAll,            // every image; those without annotations are backgrounds
  kWithKeypoints,  // only images with at least one annotation with num_keypoints > 0
};

struct DatasetInfo {
  std::string yaml_path;        // the descriptor, absolute
  std::string root;             // resolved `path`, absolute
  std::string task = "detect";  // "detect" or "pose"
  DataFormat format = DataFormat::kCoco;
  SplitFiles train, val;
  KeepImages keep_images = KeepImages::kAll;
  std::vector<std::string> names;            // [nc] class names, contiguous index order
  std::vector<int64_t> coco_ids;             // [nc] contiguous index -> COCO category id
  int64_t kpt_count = 0;                     // K (0: detection)
  int64_t kpt_dims = 0;                      // 3 (x, y, visibility) or 2
  std::vector<std::string> kpt_names;        // [K]
  std::vector<int64_t> flip_idx;             // [K] keypoint index after a horizontal flip
  std::vector<double> oks_sigmas;            // [K]
  std::vector<std::array<int, 2>> skeleton;  // 0-based keypoint pairs, for drawing

  int64_t nc() const { return static_cast<int64_t>(names.size()); }
  bool has_keypoints() const { return kpt_count > 0; }
  // Contiguous class index of a COCO category id, -1 when the descriptor does not list it.
  int64_t class_index(int64_t coco_id) const;
  // "train" or "val"; throws ConfigError otherwise.
  const SplitFiles& split(const std::string& name) const;

  std::unordered_map<int64_t, int64_t> index_of_id;  // filled by load_dataset
};

// Reads a descriptor or an Ultralytics data YAML (told apart by `classes` vs `names`/`nc`).
// `path` is looked up like any resource (working directory, then the source tree). For a
// descriptor the data root is `root_override` when given; otherwise the YAML's `path`: a path that
// starts with ../shared/data/ names the shared data root (DETRAIN_DATA when set), any other
// relative path is relative to the YAML file; a data YAML's `path` resolves as Ultralytics
// resolves it (data/ultralytics_data_yaml.h), and `root_override` replaces it too. Throws
// ConfigError naming the file and key.
DatasetInfo load_dataset(const std::string& path, const std::string& root_override = "");

}  // namespace detrain::data
