// Config resolution: defaults <- base chain <- experiment file <- overrides; see config.h.
#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include "common/errors.h"
#include "common/paths.h"
#include "common/strings.h"
#include "config/config.h"
#include "config/field_value.h"
#include "config/model_options.h"

namespace detrain::config {
namespace fs = std::filesystem;

namespace {

constexpr const char* kOverrideOrigin = "override";

std::vector<std::string> section_names() {
  Experiment e;
  std::vector<std::string> names;
  auto collect = [&](const char* name, auto&) { names.emplace_back(name); };
  e.visit_sections(collect);
  return names;
}

FieldRef* find_field(std::vector<FieldRef>& fields, const std::string& name) {
  for (auto& f : fields)
    if (f.name() == name) return &f;
  return nullptr;
}

[[noreturn]] void unknown_key(const std::string& name, const std::string& where) {
  std::string hint = closest_match(name, all_keys());
  throw ConfigError("config: unknown key '" + name + "' " + where +
                    (hint.empty() ? "; run `detrain config dump` for the valid keys"
                                  : "; did you mean '" + hint + "'?"));
}

// yaml-cpp keeps the later of two equal keys silently; a config that sets a key twice is
// refused instead, naming the line of the second.
void refuse_duplicate_keys(const YAML::Node& node, const std::string& path,
                           const std::string& prefix) {
  if (node.IsSequence())
    for (const auto& item : node) refuse_duplicate_keys(item, path, prefix);
  if (!node.IsMap()) return;
  std::vector<std::string> seen;
  for (const auto& item : node) {
    const std::string key = item.first.Scalar();
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      throw ConfigError("config: " + path + ":" + std::to_string(item.first.Mark().line + 1) +
                        ": key '" + prefix + key + "' appears twice; keep one");
    seen.push_back(key);
    refuse_duplicate_keys(item.second, path, prefix + key + ".");
  }
}

YAML::Node load_yaml_file(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status))
    throw ConfigError("config: cannot read " + path +
                      ": no such file (configs/ holds the shipped experiments)");
  if (fs::is_directory(status))
    throw ConfigError("config: cannot read " + path +
                      ": it is a directory; pass a YAML file such as configs/coco-mini.yaml");
  if (!fs::is_regular_file(status))  // /dev/null, a FIFO: not a config that can be re-read
    throw ConfigError("config: cannot read " + path +
                      ": not a regular file (a device or pipe); pass a YAML file");
  try {
    const std::vector<YAML::Node> documents = YAML::LoadAllFromFile(path);
    if (documents.size() > 1)
      throw ConfigError("config: " + path + " holds " + std::to_string(documents.size()) +
                        " YAML documents (separated by ---); one config per file");
    if (documents.empty()) return YAML::Node();
    refuse_duplicate_keys(documents.front(), path, "");
    return documents.front();
  } catch (const YAML::ParserException& e) {
    throw ConfigError("config: " + path + ":" + std::to_string(e.mark.line + 1) + ":" +
                      std::to_string(e.mark.column + 1) + ": YAML syntax error: " + e.msg);
  } catch (const YAML::Exception& e) {
    throw ConfigError("config: cannot read " + path + ": " + e.what());
  }
}

void apply_file(ResolvedConfig& resolved, std::vector<FieldRef>& fields, const std::string& path,
                std::vector<std::string>& chain) {
  const std::string canonical = fs::weakly_canonical(path).string();
  if (std::find(chain.begin(), chain.end(), canonical) != chain.end())
    throw ConfigError("config: " + path + " names itself through its base chain (" +
                      join(chain, " -> ") + ")");
  chain.push_back(canonical);

  YAML::Node root = load_yaml_file(path);
  if (root.IsNull()) {
    resolved.files.push_back(path);
    return;
  }
  if (!root.IsMap())
    throw ConfigError("config: " + path + " must be a map of sections (model:, train:, ...)");

  if (const YAML::Node base = root["base"]; base) {
    if (!base.IsScalar()) throw ConfigError("config: " + path + ": base must be a file name");
    const std::string dir = fs::path(path).parent_path().string();
    const std::string base_path = resolve_resource(base.Scalar(), dir);
    std::error_code ec;
    if (!fs::is_regular_file(base_path, ec))
      throw ConfigError("config: " + path + ": base: " + base.Scalar() + " not found (looked for " +
                        (fs::path(dir) / base.Scalar()).lexically_normal().string() +
                        "; a base is relative to the file that names it)");
    apply_file(resolved, fields, base_path, chain);
  }

  const auto sections = section_names();
  for (const auto& entry : root) {
    const std::string section = entry.first.Scalar();
    if (section == "base") continue;
    if (std::find(sections.begin(), sections.end(), section) == sections.end()) {
      std::vector<std::string> top = sections;
      top.push_back("base");
      std::string hint = closest_match(section, top);
      throw ConfigError("config: unknown section '" + section + "' in " + path +
                        (hint.empty() ? "; sections are " + join(sections, ", ")
                                      : "; did you mean '" + hint + "'?"));
    }
    if (entry.second.IsNull()) continue;
    if (!entry.second.IsMap())
      throw ConfigError("config: " + path + ": section '" + section + "' must be a map of keys");
    for (const auto& item : entry.second) {
      const std::string name = section + "." + item.first.Scalar();
      FieldRef* field = find_field(fields, name);
      if (!field) unknown_key(name, "in " + path);
      set_field(*field, item.second, path);
      resolved.origin[name] = path;
    }
  }
  resolved.files.push_back(path);
  chain.pop_back();
}

// "epochs" (as Ultralytics users type it) -> "train.epochs" when exactly one section has that
// key, said on the console; a bare key in several sections is refused listing them.
std::string qualified_override_key(const std::string& name) {
  if (name.find('.') != std::string::npos) return name;
  const std::vector<std::string> keys = keys_named(name);
  if (keys.size() > 1)
    throw ConfigError("config: override key '" + name + "' is in several sections (" +
                      join(keys, ", ") + "); write section.key=value");
  if (keys.empty()) return name;  // unknown_key() reports it with a hint
  spdlog::info("{} taken as {} (the only section with that key)", name, keys[0]);
  return keys[0];
}

void apply_override_list(ResolvedConfig& resolved, std::vector<FieldRef>& fields,
                         const std::vector<std::string>& overrides) {
  for (const auto& text : overrides) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0)
      throw ConfigError("config: override '" + text +
                        "' must look like section.key=value (e.g. train.epochs=3)");
    const std::string name = qualified_override_key(trim(text.substr(0, eq)));
    const std::string value = text.substr(eq + 1);
    FieldRef* field = find_field(fields, name);
    if (!field) unknown_key(name, "on the command line");
    YAML::Node node;
    try {
      node = value.empty() ? YAML::Node(YAML::NodeType::Null) : YAML::Load(value);
    } catch (const YAML::Exception&) {
      // Not valid YAML on its own (e.g. "a: b"): take it as a plain string.
      node = YAML::Node(value);
    }
    set_field(*field, node, "command line");
    resolved.origin[name] = kOverrideOrigin;
  }
}

}  // namespace

std::vector<std::string> all_keys() {
  Experiment e;
  std::vector<std::string> keys;
  for (const auto& f : fields_of(e)) keys.push_back(f.name());
  return keys;
}

std::vector<std::string> keys_named(const std::string& key) {
  std::vector<std::string> keys;
  Experiment e;
  for (const auto& f : fields_of(e))
    if (f.key == key) keys.push_back(f.name());
  return keys;
}

void validate(const Experiment& experiment, const std::map<std::string, std::string>& origin) {
  Experiment copy = experiment;
  for (const auto& f : fields_of(copy)) check_constraint(f, "resolved");
  auto fail = [&](const std::string& key, const std::string& value, const std::string& what) {
    const auto from = origin.find(key);
    // Named as set_field names a bad value: "(command line)" or "(configs/x.yaml)".
    std::string where;
    if (from != origin.end() && from->second == kOverrideOrigin)
      where = " (command line)";
    else if (from != origin.end() && from->second != "default")
      where = " (" + from->second + ")";
    throw ConfigError("config: " + key + " = '" + value + "'" + where + ": " + what);
  };
  if (experiment.data.imgsz % kMaxStride != 0)
    fail("data.imgsz", std::to_string(experiment.data.imgsz),
         "must be a multiple of " + std::to_string(kMaxStride) + " (the largest stride), e.g. " +
             std::to_string((experiment.data.imgsz + kMaxStride - 1) / kMaxStride * kMaxStride));
  const std::string& device = experiment.runtime.device;
  bool device_ok = device == "cpu" || device == "cuda";
  if (!device_ok && starts_with(device, "cuda:") && device.size() > 5)
    device_ok = std::all_of(device.begin() + 5, device.end(), ::isdigit);
  if (!device_ok) fail("runtime.device", device, "expected cpu, cuda or cuda:N");
  if (experiment.model.arch.empty()) fail("model.arch", "", "name an architecture YAML");
  if (experiment.data.dataset.empty()) fail("data.dataset", "", "name a data-set YAML");
  if (experiment.train.name.empty()) fail("train.name", "", "must not be empty");
}

ResolvedConfig resolve(const std::string& config_file, const std::vector<std::string>& overrides) {
  ResolvedConfig resolved;
  auto fields = fields_of(resolved.experiment);
  for (const auto& f : fields) resolved.origin[f.name()] = "default";
  if (!config_file.empty()) {
    std::vector<std::string> chain;
    apply_file(resolved, fields, resolve_resource(config_file), chain);
  }
  apply_override_list(resolved, fields, overrides);
  validate(resolved.experiment, resolved.origin);
  resolved.hash = hash_of(resolved.experiment);
  return resolved;
}

void apply_overrides(ResolvedConfig& resolved, const std::vector<std::string>& overrides) {
  auto fields = fields_of(resolved.experiment);
  apply_override_list(resolved, fields, overrides);
  validate(resolved.experiment, resolved.origin);
  resolved.hash = hash_of(resolved.experiment);
}

}  // namespace detrain::config
