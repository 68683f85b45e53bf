// `detrain`, the front end: the LibTorch-free commands (eval, config, data stats, --help,
// --version) run here, in a process that maps neither LibTorch nor OpenCV (a few ms and ~10 MB
// instead of ~0.5 s and ~500 MB: docs/architecture.md, "Two executables"); every other command is
// handed to detrain-torch by exec with the same argv.
#include <csignal>

#include "../cli_shell.h"
#include "../version_report.h"
#include "common/malloc_tuning.h"
#include "data/image_decoder.h"
#include "front_data.h"
#include "torch_handoff.h"

int main(int argc, char** argv) {
  using namespace detrain;
  keep_freed_memory_for_reuse();
  // As in detrain-torch: a write past `ulimit -f` fails with EFBIG (exit 5) instead of SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
  cli::Shell shell([] { return cli::version_report(cli::built_libtorch_line()); });
  shell.register_commands({{"config", cli::add_config_command},
                           {"eval", cli::add_eval_command},
                           {"data", cli::add_front_data_command}},
                          /*stub_others=*/true);
  if (const auto done = shell.parse(argc, argv)) return *done;
  const cli::Command& command = shell.parsed();
  bool needs_torch = !command.run || (command.runs_in_torch && command.runs_in_torch());
  if (!needs_torch) {
    const int code = cli::run_mapping_errors([&] {
      shell.start_logging();
      try {
        return command.run();
      } catch (const data::ImageNeedsDecoder&) {
        needs_torch = true;  // an image only a decoder can size: detrain-torch reads the set
        return 0;
      }
    });
    if (!needs_torch) return code;
  }
  return cli::hand_off_to_torch(command.app->get_name(), argv);
}
