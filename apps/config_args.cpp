// Shared --config/overrides handling; see commands.h.
#include "commands.h"

namespace detrain::cli {

void ConfigArgs::add_to(CLI::App* app) {
  app->add_option("--config,-c", config_file, "experiment YAML (configs/*.yaml)");
  app->add_option("overrides", overrides, "section.key=value overrides, e.g. train.epochs=3");
}

config::ResolvedConfig ConfigArgs::resolve() const {
  return config::resolve(config_file, overrides);
}

}  // namespace detrain::cli
