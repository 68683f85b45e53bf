// The CLI's subcommands. Each add_*_command registers its options on the root CLI11 app and
// returns a runner that main() calls after parsing; only apps/ parses argv or picks exit codes.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "config/config.h"

namespace detrain::cli {

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// `--config FILE` plus trailing `section.key=value` overrides, shared by every command that
// works on an experiment.
struct ConfigArgs {
  std::string config_file;
  std::vector<std::string> overrides;

  void add_to(CLI::App* app);
  config::ResolvedConfig resolve() const;
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
