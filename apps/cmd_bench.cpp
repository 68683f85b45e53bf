// `detrain bench <kind>`: performance measurements that print a table and JSON. Each kind lives
// in its own apps/bench_<kind>.cpp and registers itself here.
#include "commands.h"

namespace detrain::cli {

Command add_bench_command(CLI::App& root) {
  auto* app = root.add_subcommand("bench", "measure speed (prints a table; --json for JSON)");
  app->require_subcommand(1);
  std::vector<Command> kinds;
  // Registered kinds (one line each):
  kinds.push_back(add_bench_model(*app));
  kinds.push_back(add_bench_eval(*app));
  kinds.push_back(add_bench_optim(*app));
  kinds.push_back(add_bench_loader(*app));
  kinds.push_back(add_bench_loss(*app));
  kinds.push_back(add_bench_step(*app));

  return {app, [kinds]() {
            for (const auto& kind : kinds)
              if (kind.app->parsed()) return kind.run();
            return 2;
          }};
}

}  // namespace detrain::cli
