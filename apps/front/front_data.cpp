// The front end's `detrain data`; see front_data.h.
#include "front_data.h"

#include <list>
#include <memory>
#include <string>
#include <vector>

#include "../data_command.h"

namespace detrain::cli {

namespace {

// A kind detrain-torch registers: takes any arguments unparsed (its --help included), so
// detrain-torch parses them as it always does.
CLI::App* add_kind_stub(CLI::App& data, const std::string& kind,
                        std::vector<std::string>& arguments) {
  CLI::App* stub = data.add_subcommand(kind, data_kind_description(kind));
  stub->prefix_command();
  stub->set_help_flag();
  stub->fallthrough(false);
  stub->add_option("arguments", arguments);
  return stub;
}

}  // namespace

Command add_front_data_command(CLI::App& root) {
  auto* app = add_data_app(root);
  auto args = std::make_shared<DataStatsArgs>();
  auto unparsed = std::make_shared<std::list<std::vector<std::string>>>();
  add_kind_stub(*app, "preview", unparsed->emplace_back());
  CLI::App* stats = add_data_stats(*app, *args);
  add_kind_stub(*app, "synth", unparsed->emplace_back());
  Command command{app, [args] { return run_data_stats(*args, {}); }};
  // `unparsed` is captured to keep the stubs' argument storage alive as long as the app.
  command.runs_in_torch = [args, stats, unparsed] {
    return !stats->parsed() || args->check_images;
  };
  return command;
}

}  // namespace detrain::cli
