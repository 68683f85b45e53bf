// `detrain`, the front end: the LibTorch-free commands (eval, config, --help, --version) run
// here, in a process that maps neither LibTorch nor OpenCV (a few ms and ~10 MB instead of
// ~0.5 s and ~500 MB: docs/architecture.md, "Two executables"); every other command is handed to
// detrain-torch by exec with the same argv.
#include <csignal>

#include "../cli_shell.h"
#include "../version_report.h"
#include "common/malloc_tuning.h"
#include "torch_handoff.h"

int main(int argc, char** argv) {
  using namespace detrain;
  keep_freed_memory_for_reuse();
  // As in detrain-torch: a write past `ulimit -f` fails with EFBIG (exit 5) instead of SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
  cli::Shell shell([] { return cli::version_report(cli::built_libtorch_line()); });
  shell.register_commands({{"config", cli::add_config_command}, {"eval", cli::add_eval_command}},
                          /*stub_others=*/true);
  if (const auto done = shell.parse(argc, argv)) return *done;
  const cli::Command& command = shell.parsed();
  if (!command.run) return cli::hand_off_to_torch(command.app->get_name(), argv);
  return cli::run_mapping_errors([&] {
    shell.start_logging();
    return command.run();
  });
}
