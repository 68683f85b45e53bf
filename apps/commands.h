// The CLI's subcommands. Each add_*_command registers its options on the root CLI11 app and
// returns a runner that main() calls after parsing; only apps/ parses argv or picks exit codes.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/ultralytics_args.h"

namespace detrain::cli {

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
  // Front end only: true when the arguments parsed ask for something only detrain-torch has
  // (`data preview`, `data stats --check-images`); the front end then hands the command on.
  std::function<bool()> runs_in_torch = {};  // (an initializer: `{app, run}` leaves it empty)
};

// `--config FILE` plus trailing overrides, shared by every command that works on an
// experiment: `section.key=value`, or Ultralytics' flat arguments (`epochs=3 model=best.pt
// data=my.yaml`, translated by config/ultralytics_args.h; model= and data= here).
struct ConfigArgs {
  std::string command;  // the subcommand's name (set by add_to)
  std::string config_file;
  std::vector<std::string> overrides;  // as typed

  void add_to(CLI::App* app);
  // `overrides` as detrain keys, in order, and the Ultralytics arguments the command reads
  // itself (predict's source=, save_txt=, ...); throws ConfigError for an Ultralytics argument
  // detrain does not support.
  config::TranslatedArgs translated() const;
  // translated().overrides, for the commands that read no Ultralytics argument themselves.
  std::vector<std::string> user_overrides() const;
  // The weights a command runs: `flag_value` (-w), else a model.weights= of `translated`
  // (model=X.pt), which is removed from it. Throws a usage error when neither is given.
  std::string take_weights(std::vector<std::string>& translated,
                           const std::string& flag_value) const;
  config::ResolvedConfig resolve() const;
  // train.project as this command line sets it (the last train.project= of `translated`, else
  // the -c file's, else runs), never a checkpoint's: where val --plots and predict make their
  // numbered folders, as Ultralytics' runs/detect/val and runs/detect/predict.
  std::string project(const std::vector<std::string>& translated) const;
};

// Top-level commands (registered in detrain.cpp).
Command add_config_command(CLI::App& root);
Command add_bench_command(CLI::App& root);
Command add_model_command(CLI::App& root);
Command add_eval_command(CLI::App& root);
Command add_train_command(CLI::App& root);
Command add_val_command(CLI::App& root);
Command add_predict_command(CLI::App& root);
Command add_export_command(CLI::App& root);

// `detrain data` kinds (registered in cmd_data.cpp).
Command add_data_synth(CLI::App& data);
Command add_data_command(CLI::App& root);

}  // namespace detrain::cli
