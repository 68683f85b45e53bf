// See ultralytics_model.h.
#include "weights/ultralytics_model.h"

#include <filesystem>

#include "common/errors.h"
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

config::ModelOptions pt_model_options(const UltralyticsModelFile& file,
                                      const config::ModelOptions& given, bool arch_given) {
  config::ModelOptions o = given;
  o.weights = file.path;
  if (arch_given) return o;
  if (file.yaml_file.empty())
    throw ModelError(file.path +
                     " does not record its architecture (no yaml_file); pass the "
                     "model YAML it was built from as model.arch (-m)");
  std::pair<std::string, std::string> found;
  try {
    found = model::resolve_arch(file.yaml_file);
  } catch (const ModelError&) {
    throw ModelError(file.path + " holds " + describe(file) +
                     ", an architecture detrain does not ship; pass its YAML as model.arch (-m)");
  }
  o.arch = "models/" + fs::path(found.first).filename().string();
  const std::string scale = !found.second.empty() ? found.second : file.scale;
  if (!scale.empty()) o.scale = scale;
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
