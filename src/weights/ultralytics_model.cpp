// See ultralytics_model.h.
#include "weights/ultralytics_model.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/hash64.h"
#include "common/strings.h"
#include "model/builder.h"
#include "model/state_dict.h"

namespace detrain::weights {

namespace fs = std::filesystem;

std::string describe(const UltralyticsModelFile& f) {
  std::string s = fs::path(f.yaml_file).stem().string();
  if (s.empty()) s = "a model";
  s += " (" + (f.yaml_file.empty() ? std::string() : f.yaml_file + ", ") + f.model_class + ", " +
       std::to_string(f.nc) + " classes, " + (f.weights_of == "ema" ? "EMA" : "model") + " weights";
  if (!f.version.empty()) s += ", Ultralytics " + f.version;
  return s + ")";
}

namespace {

// Where an embedded architecture is written for the builder: DETRAIN_CACHE_DIR, else the user's
// cache folder ($XDG_CACHE_HOME/detrain or ~/.cache/detrain), as the label caches.
fs::path arch_cache_dir() {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  if (const std::string dir = env("DETRAIN_CACHE_DIR"); !dir.empty()) return fs::path(dir) / "arch";
  fs::path user = env("XDG_CACHE_HOME");
  if (user.empty()) user = fs::path(env("HOME").empty() ? "/tmp" : env("HOME")) / ".cache";
  return user / "detrain" / "arch";
}

// The file's architecture as a model YAML the builder reads: <cache>/<hash>/<family>.yaml, named
// after the yaml_file the file records (a user's YAML: "custom", "custom-pose"), written once
// per content (the same file always gives the same path).
std::string materialize(const UltralyticsModelFile& file) {
  std::string family = fs::path(file.yaml_file).stem().string();
  if (family.empty()) family = file.task == "pose" ? "custom-pose" : "custom";
  const std::string text = "# The architecture embedded in an Ultralytics .pt (" +
                           fs::path(file.path).filename().string() +
                           (file.version.empty() ? "" : ", Ultralytics " + file.version) +
                           "), written by detrain to build it.\n" + file.arch_yaml;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(hash64(text.data(), text.size())));
  const fs::path dir = arch_cache_dir() / hex;
  const fs::path path = dir / (family + ".yaml");
  std::error_code ec;
  if (fs::exists(path, ec) && read_file(path.string()) == text) return path.string();
  ensure_writable_dir(dir.string());
  write_file_atomic(path.string(), text);
  return path.string();
}

// Whether two YAMLs build the same network at the file's class count and keypoints: the same
// rows (inputs, modules, resolved arguments, repeats) and head settings.
bool same_network(const std::string& a, const std::string& b, const std::string& scale,
                  const UltralyticsModelFile& file) {
  auto rows = [&](const std::string& arch) {
    model::BuildOptions o;
    o.arch = arch;
    o.scale = model::resolve_arch(arch).second.empty() ? scale : "";
    o.nc = file.nc;
    o.kpt_shape = file.kpt_shape;
    const model::Network net = model::check_network(o);
    std::vector<std::string> out{std::to_string(net.arch.reg_max), std::to_string(net.arch.end2end),
                                 net.arch.scale};
    for (const auto& r : net.rows)
      out.push_back(r.from_text + "|" + std::to_string(r.repeats) + "|" + r.module + "|" + r.args);
    return out;
  };
  try {
    return rows(a) == rows(b);
  } catch (const ModelError&) {
    return false;
  }
}

}  // namespace

config::ModelOptions pt_model_options(const UltralyticsModelFile& file,
                                      const config::ModelOptions& given, bool arch_given) {
  config::ModelOptions o = given;
  o.weights = file.path;
  if (file.yaml_nc > 0 && file.yaml_nc != file.nc)
    spdlog::info("{}: its yaml says nc: {}, its head and names {} class(es); using {}", file.path,
                 file.yaml_nc, file.nc, file.nc);
  if (arch_given) return o;
  // The architecture is the file's own yaml dict; its yaml_file is only a hint that names the
  // shipped YAML to show instead when that builds the very same network.
  const std::string embedded = materialize(file);
  if (!file.scale.empty()) o.scale = file.scale;
  if (!file.yaml_file.empty()) {
    try {
      const auto [path, scale] = model::resolve_arch(file.yaml_file);
      const std::string shipped = "models/" + fs::path(path).filename().string();
      const std::string s = !scale.empty() ? scale : file.scale;
      if (fs::path(path).parent_path().filename() == "models" &&
          same_network(shipped, embedded, s, file)) {
        o.arch = shipped;
        if (!s.empty()) o.scale = s;
        return o;
      }
    } catch (const ModelError&) {
      // not a shipped name: the embedded architecture below
    }
  }
  o.arch = embedded;
  return o;
}

int64_t pt_cls_width(const UltralyticsModelFile& file) {
  // The class conv is the last module of cv3.0: "model.<N>.cv3.0.<last>.weight", [nc, width].
  int64_t width = 0;
  for (const auto& [name, t] : file.state) {
    const auto at = name.find(".cv3.0.");
    if (at == std::string::npos || !ends_with(name, ".weight")) continue;
    if (t.dim() == 4 && t.size(0) == file.nc && t.size(2) == 1) width = t.size(1);
  }
  return width;
}

model::YoloModel model_from_pt(const UltralyticsModelFile& file,
                               const config::ModelOptions& options) {
  config::ModelOptions build = options;
  build.weights.clear();
  build.nc = file.nc;
  model::YoloModel m = model::make_model(build, file.nc, file.kpt_shape);
  try {
    model::load_state_dict(*m, state_map(file), file.path);
  } catch (const ModelError& e) {
    throw ModelError(file.path + " holds " + describe(file) + ", which model.arch=" + options.arch +
                     " (scale " + m->arch().scale + ") does not build: " + e.what());
  }
  return m;
}

}  // namespace detrain::weights
