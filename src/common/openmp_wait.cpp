// The OpenMP wait policy by re-exec; see openmp_wait.h.
#include "common/openmp_wait.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "common/cores.h"
#include "common/machine_load.h"

namespace detrain {

namespace {

constexpr const char* kChoice = "DETRAIN_OPENMP_WAIT";

bool long_running(const char* command) {
  // Short commands (config, model, eval, data, --help) would only pay a second start-up.
  for (const char* name : {"train", "val", "predict", "bench"})
    if (std::strcmp(command, name) == 0) return true;
  return false;
}

}  // namespace

bool choose_openmp_wait_for(const char* command) {
  if (command == nullptr || !long_running(command)) return false;
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr)
    return false;
  const std::optional<MachineLoad> load = startup_machine_load();
  const std::string seen = load ? format_machine_load(*load) : "load unknown";
  std::string choice;
  if (load && !machine_is_busy(*load, usable_cores())) {
    const std::string spins = std::to_string(kBoundedSpins);
    if (setenv("GOMP_SPINCOUNT", spins.c_str(), 0) != 0) return false;
    choice = "bounded spin (GOMP_SPINCOUNT=" + spins + "): idle CPUs, " + seen;
  } else {
    if (setenv("OMP_WAIT_POLICY", "PASSIVE", 0) != 0) return false;
    choice = "passive: " + std::string(load ? "busy CPUs, " : "") + seen;
  }
  setenv(kChoice, choice.c_str(), 1);
  return true;
}

void reexec_with_chosen_openmp_wait(const char* command, char** argv) {
#if defined(__linux__)
  if (choose_openmp_wait_for(command)) execv("/proc/self/exe", argv);  // returns only on failure
#else
  (void)command;
  (void)argv;
#endif
}

std::string openmp_wait_in_effect() {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spins = std::getenv("GOMP_SPINCOUNT");
  if (const char* chosen = std::getenv(kChoice)) {
    // Ours only while the variables still say what we set (a user may export them later).
    const std::string text = chosen;
    const bool spin_choice = text.rfind("bounded spin", 0) == 0;
    if (spin_choice ? (spins && std::to_string(kBoundedSpins) == spins && !policy)
                    : (policy && std::strcmp(policy, "PASSIVE") == 0 && !spins))
      return text;
  }
  std::string user;
  if (policy) user += std::string("OMP_WAIT_POLICY=") + policy;
  if (spins) user += std::string(user.empty() ? "" : " ") + "GOMP_SPINCOUNT=" + spins;
  return user.empty() ? "libgomp default" : user + " (set by you)";
}

}  // namespace detrain
