// detrain-torch: the executable that runs every command, LibTorch and OpenCV linked in. Users
// start `detrain` (apps/front/), which runs the LibTorch-free commands itself and execs this one
// for the others with the same argv; started directly it behaves the same. main() registers the
// commands and leaves parsing, logging and exit codes to cli_shell.h.
#include <c10/util/Exception.h>

#include <csignal>

#include "cli_shell.h"
#include "common/malloc_tuning.h"
#include "common/openmp_wait.h"
#include "compat/runtime.h"
#include "compat/torch_compat.h"
#include "version_report.h"

namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// c10::Error's what() carries a C++ backtrace; its first line without it is the message.
std::string describe_libtorch_error(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  return c10_error ? "LibTorch: " + first_line(c10_error->what_without_backtrace()) : "";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace detrain;
  reexec_with_chosen_openmp_wait(argc > 1 ? argv[1] : nullptr, argv);
  keep_freed_memory_for_reuse();
  // Under a file-size limit (ulimit -f) a write past it fails with EFBIG, reported like a full
  // disk (exit 5, temporary removed), instead of SIGXFSZ killing the process mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  cli::Shell shell([] {
    return cli::version_report(cli::libtorch_line(compat::torch_version(), compat::cuda_status()));
  });
  shell.register_commands({{"config", cli::add_config_command},
                           {"model", cli::add_model_command},
                           {"bench", cli::add_bench_command},
                           {"eval", cli::add_eval_command},
                           {"train", cli::add_train_command},
                           {"val", cli::add_val_command},
                           {"predict", cli::add_predict_command},
                           {"export", cli::add_export_command},
                           {"data", cli::add_data_command}},
                          /*stub_others=*/false);
  if (const auto done = shell.parse(argc, argv)) return *done;
  return cli::run_mapping_errors(
      [&] {
        shell.start_logging();
        compat::route_libtorch_messages();
        return shell.parsed().run();
      },
      describe_libtorch_error);
}
