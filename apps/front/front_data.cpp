// The front end's `detrain data`; see front_data.h.
#include "front_data.h"

#include <list>
#include <memory>
#include <string>
#include <vector>

#include "../cli_shell.h"
#include "../data_command.h"

namespace detrain::cli {

Command add_front_data_command(CLI::App& root) {
  auto* app = add_data_app(root);
  auto args = std::make_shared<DataStatsArgs>();
  auto unparsed = std::make_shared<std::list<std::vector<std::string>>>();
  add_passthrough(*app, "preview", data_kind_description("preview"), unparsed->emplace_back());
  CLI::App* stats = add_data_stats(*app, *args);
  add_passthrough(*app, "synth", data_kind_description("synth"), unparsed->emplace_back());
  Command command{app, [args] { return run_data_stats(*args, {}); }};
  // `unparsed` is captured to keep the stubs' argument storage alive as long as the app.
  command.runs_in_torch = [args, stats, unparsed] {
    return !stats->parsed() || args->check_images;
  };
  return command;
}

}  // namespace detrain::cli
