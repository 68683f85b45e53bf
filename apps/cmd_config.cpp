// `detrain config show|dump`: print the resolved configuration as a table, or as YAML
// (`dump` with no config regenerates configs/default.yaml).
#include <iostream>
#include <memory>

#include "command_table.h"
#include "commands.h"
#include "common/atomic_file.h"

namespace detrain::cli {

Command add_config_command(CLI::App& root) {
  auto* app = root.add_subcommand("config", command_description("config"));
  app->require_subcommand(1);
  auto args_show = std::make_shared<ConfigArgs>();
  auto args_dump = std::make_shared<ConfigArgs>();
  auto out_path = std::make_shared<std::string>();

  auto* show = app->add_subcommand("show", "print the resolved configuration as a table");
  args_show->add_to(show);
  auto* dump = app->add_subcommand(
      "dump", "print the resolved configuration as documented YAML (configs/default.yaml)");
  args_dump->add_to(dump);
  dump->add_option("--out,-o", *out_path, "write to this file (atomically) instead of stdout");

  return {app, [=]() {
            if (*show) {
              std::cout << config::table(args_show->resolve());
              return 0;
            }
            const auto resolved = args_dump->resolve();
            const std::string text = config::dump_yaml(resolved.experiment, true);
            if (out_path->empty())
              std::cout << text;
            else
              write_file_atomic(*out_path, text);
            return 0;
          }};
}

}  // namespace detrain::cli
