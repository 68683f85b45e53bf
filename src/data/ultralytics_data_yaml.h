// Ultralytics data YAMLs (`path`, `train`/`val`/`test`, `names` or `nc`, `kpt_shape`,
// `flip_idx`, and detrain's `skeleton`), checked and resolved as Ultralytics 8.4.190's
// check_det_dataset does, for data sets in YOLO txt-label format. detrain's own descriptors
// (dataset.h) name COCO JSON files instead; looks_like_ultralytics_data_yaml tells the two
// apart.
#pragma once

#include <yaml-cpp/yaml.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace detrain::data {

struct UltralyticsDataYaml {
  std::string yaml_path;                      // absolute
  std::string root;                           // resolved `path`, absolute
  std::vector<std::string> train, val, test;  // absolute sources (dirs, .txt lists or images)
  std::vector<std::string> names;             // [nc]
  int64_t kpt_count = 0, kpt_dims = 0;        // from kpt_shape
  std::vector<int64_t> flip_idx;              // [kpt_count] or empty
  std::vector<std::array<int, 2>> skeleton;   // limbs for drawing (read_skeleton), or empty
};

// A `skeleton` key, which both YAML kinds may carry (Ultralytics' own data YAMLs have none; its
// plots join COCO's 17 keypoints by a built-in skeleton): a list of [a, b] pairs of 0-based
// keypoint indices below `kpt_count`, the limbs the plots draw. Throws ConfigError naming
// `file`, the key and the entry.
std::vector<std::array<int, 2>> read_skeleton(const YAML::Node& node, int64_t kpt_count,
                                              const std::string& file);

// True when `names` are the placeholders a data YAML with `nc` alone gets (class_0, class_1,
// ...): a weights file's own names are then the better ones.
bool placeholder_class_names(const std::vector<std::string>& names);

// `names` or `nc` present and `train` a string or a list of strings.
bool looks_like_ultralytics_data_yaml(const YAML::Node& doc);

// `root_override`, when not empty, replaces the YAML's `path`. Every val source must exist
// (as the reference checks; its `download:` is never run): DataError when one is missing.
// Throws ConfigError naming the file and key for a bad key or value.
UltralyticsDataYaml read_ultralytics_data_yaml(const YAML::Node& doc, const std::string& yaml_path,
                                               const std::string& root_override);

}  // namespace detrain::data
