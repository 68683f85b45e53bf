// Shared --config/overrides handling; see commands.h.
#include <filesystem>

#include "commands.h"
#include "common/errors.h"
#include "config/ultralytics_args.h"

namespace detrain::cli {

namespace {

// `model=` names weights (a .pt, a checkpoint, safetensors or a run directory) or an
// architecture (yolo11n, models/yolov8.yaml), as `yolo ... model=` does.
bool names_weights(const std::string& value) {
  const std::string ext = std::filesystem::path(value).extension().string();
  if (ext == ".pt" || ext == ".pth" || ext == ".ckpt" || ext == ".safetensors") return true;
  std::error_code ec;
  return std::filesystem::is_directory(value, ec);
}

}  // namespace

void ConfigArgs::add_to(CLI::App* app) {
  command = app->get_name();
  app->add_option("--config,-c", config_file, "experiment YAML (configs/*.yaml)");
  app->add_option("overrides", overrides,
                  "section.key=value overrides (train.epochs=3), or Ultralytics arguments "
                  "(epochs=3 imgsz=320 model=best.pt data=my.yaml; docs/ultralytics-args.md)");
}

config::TranslatedArgs ConfigArgs::translated() const {
  config::TranslatedArgs out;
  std::vector<std::string> flat;
  // Ultralytics' arguments belong to its modes; elsewhere (config show, bench) a bare key keeps
  // detrain's rule (the one section that has it, config/resolve.cpp).
  const bool ultralytics_mode =
      command == "train" || command == "val" || command == "predict" || command == "export";
  auto flush = [&] {
    if (flat.empty()) return;
    if (!ultralytics_mode) {
      out.overrides.insert(out.overrides.end(), flat.begin(), flat.end());
      flat.clear();
      return;
    }
    config::TranslatedArgs t = config::translate_ultralytics_args(flat, command);
    for (auto& o : t.overrides) out.overrides.push_back(std::move(o));
    for (auto& [name, value] : t.own) out.own[name] = std::move(value);
    flat.clear();
  };
  for (const std::string& o : overrides) {
    const auto eq = o.find('=');
    const std::string key = o.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : o.substr(eq + 1);
    if (key == "model" && eq != std::string::npos) {
      flush();
      out.overrides.push_back((names_weights(value) ? "model.weights=" : "model.arch=") + value);
    } else if (key == "data" && eq != std::string::npos) {
      flush();
      out.overrides.push_back("data.dataset=" + value);
    } else if (key.find('.') != std::string::npos) {
      flush();
      out.overrides.push_back(o);
    } else {
      flat.push_back(o);
    }
  }
  flush();
  return out;
}

std::vector<std::string> ConfigArgs::user_overrides() const {
  config::TranslatedArgs t = translated();
  // The table gives own arguments to predict only, which calls translated() itself.
  if (!t.own.empty())
    throw Error(ExitCode::kInternal, "detrain " + command + ": `" + t.own.begin()->first +
                                         "` was translated as an option this command lacks");
  return std::move(t.overrides);
}

std::string ConfigArgs::take_weights(std::vector<std::string>& translated,
                                     const std::string& flag_value) const {
  std::string weights = flag_value;
  for (auto it = translated.begin(); it != translated.end();) {
    if (it->rfind("model.weights=", 0) == 0) {
      if (weights.empty()) weights = it->substr(14);
      it = translated.erase(it);
    } else {
      ++it;
    }
  }
  if (weights.empty())
    throw Error(ExitCode::kUsage, "detrain " + command +
                                      ": give the weights, as -w FILE or model=FILE " +
                                      "(an Ultralytics .pt, a checkpoint or a run directory)");
  return weights;
}

std::string ConfigArgs::project(const std::vector<std::string>& translated) const {
  std::vector<std::string> project_words;
  for (const std::string& o : translated)
    if (o.rfind("train.project=", 0) == 0) project_words.push_back(o);
  return config::resolve(config_file, project_words).experiment.train.project;
}

config::ResolvedConfig ConfigArgs::resolve() const {
  return config::resolve(config_file, user_overrides());
}

}  // namespace detrain::cli
