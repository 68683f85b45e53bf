// Data-set descriptor loading; see dataset.h. A 17-keypoint set without oks_sigmas gets COCO's,
// any other K the reference's 1/K.
#include "data/dataset.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "coco/keypoint_sigmas.h"
#include "common/errors.h"
#include "common/paths.h"
#include "data/ultralytics_data_yaml.h"

namespace detrain::data {
namespace fs = std::filesystem;

namespace {

constexpr const char* kSharedPrefix = "../shared/data/";

// A 17-keypoint descriptor that names no sigmas gets COCO's, the values pycocotools evaluates
// with (as the reference's pose validator falls back to OKS_SIGMA).
void set_oks_sigmas_default(DatasetInfo& info) {
  const auto k = static_cast<size_t>(info.kpt_count);
  if (k == coco::kPersonKeypoints)
    info.oks_sigmas = coco::person_keypoint_sigmas();
  else
    info.oks_sigmas.assign(k, 1.0 / static_cast<double>(k));  // the reference's fallback
}

struct Reader {
  std::string file;
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw ConfigError(file + ": '" + key + "' " + what);
  }
  template <class T>
  T get(const YAML::Node& node, const std::string& key, const std::string& type) const {
    try {
      return node.as<T>();
    } catch (const YAML::Exception&) {
      fail(key, "must be " + type);
    }
  }
  std::string text(const YAML::Node& parent, const std::string& key) const {
    const YAML::Node n = parent[key];
    if (!n.IsDefined() || n.IsNull()) fail(key, "is missing (see data/coco-mini.yaml)");
    return get<std::string>(n, key, "a string");
  }
};

std::string resolve_root(const std::string& path_value, const fs::path& yaml_dir) {
  if (path_value.rfind(kSharedPrefix, 0) == 0) {
    if (auto shared = shared_data_root())
      return (fs::path(*shared) / path_value.substr(std::string(kSharedPrefix).size()))
          .lexically_normal()
          .string();
  }
  fs::path p(path_value);
  if (p.is_relative()) p = yaml_dir / p;
  return fs::absolute(p).lexically_normal().string();
}

SplitFiles read_split(const Reader& r, const YAML::Node& doc, const std::string& name,
                      const fs::path& root) {
  const YAML::Node node = doc[name];
  if (!node.IsMap())
    r.fail(name, "must be a map with 'annotations' and 'images' (see data/coco-mini.yaml)");
  auto under_root = [&](const std::string& key) {
    fs::path p(r.text(node, key));
    return (p.is_relative() ? root / p : p).lexically_normal().string();
  };
  return {under_root("annotations"), under_root("images"), {}};
}

void read_keypoints(const Reader& r, const YAML::Node& doc, DatasetInfo& info) {
  const YAML::Node shape = doc["kpt_shape"];
  if (!shape.IsDefined()) {
    if (info.task == "pose") r.fail("kpt_shape", "is missing for a pose data set (e.g. [17, 3])");
    return;
  }
  const auto dims = r.get<std::vector<int64_t>>(shape, "kpt_shape", "a list [K, 2 or 3]");
  if (dims.size() != 2 || dims[0] < 1 || (dims[1] != 2 && dims[1] != 3))
    r.fail("kpt_shape", "must be [K, 2] or [K, 3] with K >= 1");
  info.kpt_count = dims[0];
  info.kpt_dims = dims[1];
  const auto k = static_cast<size_t>(info.kpt_count);
  if (doc["kpt_names"].IsDefined())
    info.kpt_names = r.get<std::vector<std::string>>(doc["kpt_names"], "kpt_names", "a list");
  if (doc["flip_idx"].IsDefined()) {
    info.flip_idx = r.get<std::vector<int64_t>>(doc["flip_idx"], "flip_idx", "a list of integers");
    std::vector<int64_t> sorted = info.flip_idx;
    std::sort(sorted.begin(), sorted.end());
    bool permutation = sorted.size() == k;
    for (size_t i = 0; permutation && i < k; ++i) permutation = sorted[i] == int64_t(i);
    if (!permutation)
      r.fail("flip_idx",
             "must be a permutation of 0.." + std::to_string(k - 1) + " (one entry per keypoint)");
  }
  if (doc["oks_sigmas"].IsDefined())
    info.oks_sigmas = r.get<std::vector<double>>(doc["oks_sigmas"], "oks_sigmas", "a list");
  else
    set_oks_sigmas_default(info);
  if (info.oks_sigmas.size() != k)
    r.fail("oks_sigmas", "must hold " + std::to_string(k) + " values (one per keypoint)");
  info.skeleton = read_skeleton(doc["skeleton"], info.kpt_count, r.file);
}

// An Ultralytics data YAML: classes are the label files' indices, so category id = index.
DatasetInfo from_ultralytics(const YAML::Node& doc, const std::string& file,
                             const std::string& root_override) {
  const UltralyticsDataYaml y = read_ultralytics_data_yaml(doc, file, root_override);
  DatasetInfo info;
  info.format = DataFormat::kYolo;
  info.yaml_path = y.yaml_path;
  info.root = y.root;
  info.task = y.kpt_count > 0 ? "pose" : "detect";
  const auto split = [&](const std::vector<std::string>& sources, const char* key) {
    if (sources.empty())
      throw ConfigError(file + ": '" + key + "' is missing (a folder, .txt list or list of them)");
    SplitFiles s;
    s.annotations = sources.front();
    s.yolo_sources = sources;
    return s;
  };
  info.train = split(y.train, "train");
  info.val = split(y.val, "val");
  info.names = y.names;
  for (int64_t i = 0; i < info.nc(); ++i) {
    info.coco_ids.push_back(i);
    info.index_of_id.emplace(i, i);
  }
  info.kpt_count = y.kpt_count;
  info.kpt_dims = y.kpt_dims;
  info.flip_idx = y.flip_idx;
  info.skeleton = y.skeleton;
  if (info.kpt_count > 0) set_oks_sigmas_default(info);
  return info;
}

}  // namespace

int64_t DatasetInfo::class_index(int64_t coco_id) const {
  const auto it = index_of_id.find(coco_id);
  return it == index_of_id.end() ? -1 : it->second;
}

const SplitFiles& DatasetInfo::split(const std::string& name) const {
  if (name == "train") return train;
  if (name == "val") return val;
  throw ConfigError("unknown split '" + name + "' (use train or val)");
}

DatasetInfo load_dataset(const std::string& path, const std::string& root_override) {
  const std::string file = resolve_resource(path);
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw ConfigError("data set descriptor '" + path +
                      "' not found (give a path to a data/*.yaml file)");
  Reader r{file};
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(file);
  } catch (const YAML::Exception& e) {
    throw ConfigError(file + ": not valid YAML (" + e.what() + ")");
  }
  if (!doc.IsMap()) throw ConfigError(file + ": must be a YAML map (see data/coco-mini.yaml)");
  if (!doc["classes"].IsDefined() && looks_like_ultralytics_data_yaml(doc))
    return from_ultralytics(doc, file, root_override);

  DatasetInfo info;
  info.yaml_path = fs::absolute(file).lexically_normal().string();
  const fs::path yaml_dir = fs::path(info.yaml_path).parent_path();
  info.root = root_override.empty() ? resolve_root(r.text(doc, "path"), yaml_dir)
                                    : fs::absolute(root_override).lexically_normal().string();
  if (doc["task"].IsDefined()) info.task = r.text(doc, "task");
  if (info.task != "detect" && info.task != "pose") r.fail("task", "must be detect or pose");
  info.train = read_split(r, doc, "train", info.root);
  info.val = read_split(r, doc, "val", info.root);
  if (doc["keep_images"].IsDefined()) {
    const std::string keep = r.text(doc, "keep_images");
    if (keep == "with_keypoints")
      info.keep_images = KeepImages::kWithKeypoints;
    else if (keep != "all")
      r.fail("keep_images", "must be all or with_keypoints");
  }

  const YAML::Node classes = doc["classes"];
  if (!classes.IsSequence() || classes.size() == 0)
    r.fail("classes", "must be a non-empty list of {id: <COCO category id>, name: <name>}");
  for (size_t i = 0; i < classes.size(); ++i) {
    const std::string key = "classes[" + std::to_string(i) + "]";
    if (!classes[i].IsMap()) r.fail(key, "must be {id: <COCO category id>, name: <name>}");
    const auto id = r.get<int64_t>(classes[i]["id"], key + ".id", "an integer category id");
    if (!info.index_of_id.emplace(id, static_cast<int64_t>(i)).second)
      r.fail(key + ".id", "repeats category id " + std::to_string(id));
    info.coco_ids.push_back(id);
    info.names.push_back(r.text(classes[i], "name"));
  }
  read_keypoints(r, doc, info);
  return info;
}

}  // namespace detrain::data
