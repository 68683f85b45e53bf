// Differs from check_det_dataset where that would need Python or the network: no downloads,
// no archives, no ImageNet code-to-name map, and no fallback of a relative `path` to the
// Ultralytics settings' DATASETS_DIR (a relative `path` that does not exist from the working
// directory is taken relative to the YAML's folder instead).
#include "data/ultralytics_data_yaml.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "common/errors.h"

namespace detrain::data {
namespace fs = std::filesystem;

namespace {

struct Reader {
  std::string file;
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw ConfigError(file + ": '" + key + "' " + what);
  }
};

bool present(const YAML::Node& n) { return n.IsDefined() && !n.IsNull(); }

bool is_sources(const YAML::Node& n) {
  if (n.IsScalar()) return true;
  if (!n.IsSequence()) return false;
  for (const YAML::Node& item : n) {
    if (!item.IsScalar()) return false;
  }
  return true;
}

// pathlib's resolve(): absolute, symbolic links resolved as far as the path exists.
fs::path resolved(const fs::path& p) {
  std::error_code ec;
  fs::path out = fs::weakly_canonical(fs::absolute(p), ec);
  return ec ? fs::absolute(p).lexically_normal() : out;
}

bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

int64_t read_integer(const Reader& r, const YAML::Node& n, const std::string& key,
                     const std::string& what) {
  // Integer-like values such as 10.0 or '10' count, as the reference's float() test lets them.
  double v = 0;
  try {
    if (!n.IsScalar()) r.fail(key, what);
    v = n.as<double>();
  } catch (const YAML::Exception&) {
    r.fail(key, what);
  }
  if (!std::isfinite(v) || v != std::floor(v) || std::fabs(v) > 1e15) r.fail(key, what);
  return static_cast<int64_t>(v);
}

std::vector<std::string> read_names(const Reader& r, const YAML::Node& n) {
  const auto text = [&](const YAML::Node& v, const std::string& which) {
    if (!v.IsScalar() || v.Scalar().empty()) {
      r.fail("names", "entry " + which + " must be a class name (a string)");
    }
    return v.Scalar();
  };
  std::vector<std::string> names;
  if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i) names.push_back(text(n[i], std::to_string(i)));
  } else {
    std::map<int64_t, std::string> by_index;
    for (const auto& kv : n) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      size_t used = 0;
      int64_t index = -1;
      try {
        index = std::stoll(key, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != key.size() || index < 0) {
        r.fail("names", "key '" + key + "' must be a class index 0, 1, 2, ...");
      }
      by_index[index] = text(kv.second, key);
    }
    const auto count = static_cast<int64_t>(by_index.size());
    if (count > 0 && by_index.rbegin()->first != count - 1) {
      r.fail("names", "keys must be the class indices 0-" + std::to_string(count - 1) + " (" +
                          std::to_string(count) + " names), not " +
                          std::to_string(by_index.begin()->first) + "-" +
                          std::to_string(by_index.rbegin()->first));
    }
    for (auto& kv : by_index) names.push_back(std::move(kv.second));
  }
  return names;
}

std::vector<std::string> read_sources(const YAML::Node& n, const fs::path& root) {
  std::vector<std::string> out;
  if (n.IsScalar()) {
    const std::string v = n.Scalar();
    fs::path x = resolved(root / v);
    // A "../" the data set's own folder cannot satisfy is retried without it, as the reference
    // does.
    if (!path_exists(x) && v.rfind("../", 0) == 0) x = resolved(root / v.substr(3));
    out.push_back(x.string());
  } else {
    for (const YAML::Node& item : n) out.push_back(resolved(root / item.Scalar()).string());
  }
  return out;
}

void read_keypoints(const Reader& r, const YAML::Node& doc, UltralyticsDataYaml& out) {
  const YAML::Node shape = doc["kpt_shape"];
  if (present(shape)) {
    if (!shape.IsSequence() || shape.size() != 2) {
      r.fail("kpt_shape", "must be [keypoints, 2 or 3], e.g. [17, 3] (x, y, visibility)");
    }
    const std::string what = "must be [keypoints, 2 or 3], e.g. [17, 3] (x, y, visibility)";
    out.kpt_count = read_integer(r, shape[0], "kpt_shape", what);
    out.kpt_dims = read_integer(r, shape[1], "kpt_shape", what);
    if (out.kpt_count < 1 || (out.kpt_dims != 2 && out.kpt_dims != 3)) r.fail("kpt_shape", what);
  }
  const YAML::Node flip = doc["flip_idx"];
  if (!present(flip)) return;
  if (!flip.IsSequence()) r.fail("flip_idx", "must be a list of keypoint indices");
  if (flip.size() == 0) return;  // as the reference: no flip_idx, so no flips for keypoints
  if (out.kpt_count == 0) r.fail("flip_idx", "needs kpt_shape (e.g. kpt_shape: [17, 3])");
  const std::string range = "must hold keypoint indices 0-" + std::to_string(out.kpt_count - 1);
  for (const YAML::Node& v : flip) {
    const int64_t i = read_integer(r, v, "flip_idx", range);
    if (i < 0 || i >= out.kpt_count) r.fail("flip_idx", range);
    out.flip_idx.push_back(i);
  }
  if (static_cast<int64_t>(out.flip_idx.size()) != out.kpt_count) {
    r.fail("flip_idx", "has " + std::to_string(out.flip_idx.size()) +
                           " entries; kpt_shape needs one per keypoint (" +
                           std::to_string(out.kpt_count) + ")");
  }
}

}  // namespace

std::vector<std::array<int, 2>> read_skeleton(const YAML::Node& node, int64_t kpt_count,
                                              const std::string& file) {
  const Reader r{file};
  if (!present(node)) return {};
  const std::string form =
      "must be a list of [a, b] keypoint index pairs (0-based), e.g. "
      "[[0, 1], [1, 2]]";
  if (!node.IsSequence()) r.fail("skeleton", form);
  if (node.size() > 0 && kpt_count <= 0)
    r.fail("skeleton", "needs kpt_shape (e.g. kpt_shape: [17, 3])");
  std::vector<std::array<int, 2>> limbs;
  for (size_t i = 0; i < node.size(); ++i) {
    const YAML::Node pair = node[i];
    const std::string entry = "entry " + std::to_string(i);
    if (!pair.IsSequence() || pair.size() != 2) r.fail("skeleton", entry + " " + form);
    const int64_t a = read_integer(r, pair[0], "skeleton", entry + " " + form);
    const int64_t b = read_integer(r, pair[1], "skeleton", entry + " " + form);
    if (a < 0 || b < 0 || a >= kpt_count || b >= kpt_count)
      r.fail("skeleton", entry + " [" + std::to_string(a) + ", " + std::to_string(b) +
                             "] names a keypoint outside 0-" + std::to_string(kpt_count - 1) +
                             " (kpt_shape's count; the pairs are 0-based)");
    limbs.push_back({static_cast<int>(a), static_cast<int>(b)});
  }
  return limbs;
}

bool placeholder_class_names(const std::vector<std::string>& names) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] != "class_" + std::to_string(i)) return false;
  return !names.empty();
}

bool looks_like_ultralytics_data_yaml(const YAML::Node& doc) {
  if (!doc.IsMap()) return false;
  const YAML::Node train = doc["train"];
  return (doc["names"].IsDefined() || doc["nc"].IsDefined()) && train.IsDefined() &&
         !train.IsNull() && is_sources(train);
}

UltralyticsDataYaml read_ultralytics_data_yaml(const YAML::Node& doc, const std::string& yaml_path,
                                               const std::string& root_override) {
  UltralyticsDataYaml out;
  out.yaml_path = fs::absolute(yaml_path).lexically_normal().string();
  const Reader r{yaml_path};
  if (!doc.IsMap())
    throw ConfigError(yaml_path + ": must be a map of keys (path, train, val, names)");

  // Node assignment writes through in yaml-cpp, so the alias is picked before binding.
  const bool alias = !doc["val"].IsDefined() && doc["validation"].IsDefined();
  if (alias) {
    spdlog::warn("{}: reading 'validation' as 'val', the key Ultralytics data YAMLs use",
                 yaml_path);
  }
  const YAML::Node val = alias ? doc["validation"] : doc["val"];
  const std::string sources = "must be a path or a list of paths (folders, .txt lists, images)";
  for (const auto& [key, node] : {std::pair<std::string, YAML::Node>{"train", doc["train"]},
                                  {"val", val},
                                  {"test", doc["test"]}}) {
    if (present(node) && !is_sources(node)) r.fail(key, sources);
    if (key != "test" && (!present(node) || (node.IsScalar() && node.Scalar().empty()) ||
                          (node.IsSequence() && node.size() == 0))) {
      r.fail(key,
             "is missing: Ultralytics data YAMLs need train and val, e.g. 'train: images/train'");
    }
  }
  if (present(doc["path"]) && !doc["path"].IsScalar())
    r.fail("path", "must be a folder (a string)");
  const YAML::Node names = doc["names"];
  if (present(names) && !names.IsSequence() && !names.IsMap()) {
    r.fail("names", "must be a list [a, b] or a map {0: a, 1: b}");
  }

  // Classes: `names`, or `nc` alone for class_0, class_1, ...
  const YAML::Node nc_node = doc["nc"];
  if (!present(names) && !nc_node.IsDefined()) {
    r.fail("names", "is missing: give the class names (names: [person, car]) or their count (nc)");
  }
  if (present(names)) out.names = read_names(r, names);
  if (nc_node.IsDefined()) {
    const int64_t nc = read_integer(r, nc_node, "nc", "must be an integer (the number of classes)");
    if (present(names) && static_cast<int64_t>(out.names.size()) != nc) {
      r.fail("nc", std::to_string(nc) + " does not match the " + std::to_string(out.names.size()) +
                       " entries of 'names'; fix one of them (or drop nc)");
    }
    for (int64_t i = 0; !present(names) && i < nc; ++i)
      out.names.push_back("class_" + std::to_string(i));
  }
  if (out.names.empty()) r.fail("names", "is empty: a data set needs at least one class");
  read_keypoints(r, doc, out);
  out.skeleton = read_skeleton(doc["skeleton"], out.kpt_count, yaml_path);

  // The root: the override, else `path` (as given from the working directory when it exists
  // there, else from the YAML's folder), else the YAML's folder.
  const fs::path yaml_dir = fs::path(out.yaml_path).parent_path();
  fs::path root;
  if (!root_override.empty()) {
    root = root_override;
  } else if (present(doc["path"]) && !doc["path"].Scalar().empty()) {
    root = doc["path"].Scalar();
    if (root.is_relative() && !path_exists(root)) root = yaml_dir / root;
  } else {
    root = yaml_dir;
  }
  root = resolved(root);
  out.root = root.string();

  out.train = read_sources(doc["train"], root);
  out.val = read_sources(val, root);
  const YAML::Node test = doc["test"];
  if (present(test) && !(test.IsScalar() && test.Scalar().empty())) {
    out.test = read_sources(test, root);
  }
  // A data set that is not there is bad data (exit 4), as a missing image folder is, not a
  // bad key.
  for (const std::string& v : out.val) {
    if (!path_exists(v)) {
      throw DataError(yaml_path + ": 'val' path " + v +
                      " does not exist; fetch the data set first (detrain never runs a data "
                      "YAML's download:) or fix 'path' (" +
                      out.root + ")");
    }
  }
  return out;
}

}  // namespace detrain::data
