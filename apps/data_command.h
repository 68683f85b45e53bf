// What `detrain data` is in both executables: the `data` app, its kinds' one-line descriptions,
// and the `stats` kind, which needs neither LibTorch nor OpenCV and so runs in the front end too
// (docs/architecture.md, "Two executables"). preview and synth are registered by detrain-torch
// (cmd_data.cpp); the front end registers them as stubs it hands on.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "commands.h"
#include "data/split_stats.h"

namespace detrain::cli {

struct DataStatsArgs {
  ConfigArgs config;
  std::string data;
  std::string split = "train";
  bool check_images = false;
};

// The `data` app on `root`, with the table's description; a kind is required.
CLI::App* add_data_app(CLI::App& root);

// The description of `data preview` / `stats` / `synth`.
const char* data_kind_description(const std::string& kind);

// Registers `data stats` on `data`, filling `args`.
CLI::App* add_data_stats(CLI::App& data, DataStatsArgs& args);

// Reads every split asked for, then prints their census (nothing is printed when a split
// fails, so the front end can still hand the command to detrain-torch). `decodes` is used with
// --check-images and must then be set.
int run_data_stats(const DataStatsArgs& args, const data::ImageCheck& decodes);

}  // namespace detrain::cli
