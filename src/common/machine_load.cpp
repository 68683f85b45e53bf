// Start-time machine load; see machine_load.h.
#include "common/machine_load.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

namespace detrain {

namespace {

constexpr const char* kEnvironment = "DETRAIN_MACHINE_LOAD";

std::optional<int> procs_running() {
  std::ifstream stat("/proc/stat");
  std::string key;
  long long value = 0;
  while (stat >> key) {
    if (key == "procs_running" && stat >> value) return static_cast<int>(value);
    stat.ignore(1 << 16, '\n');
  }
  return std::nullopt;
}

// This process's threads in state R (running or runnable), the reading one included.
int own_runnable_threads() {
  int running = 0;
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
    std::ifstream stat(task.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // "tid (comm) S ...": the state follows the last ')' (a thread name may hold one).
    const size_t close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'R') ++running;
  }
  return running;
}

}  // namespace

std::optional<MachineLoad> sample_machine_load(int samples, int interval_ms, bool exclude_own) {
  double sum = 0;
  for (int i = 0; i < samples; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
    const std::optional<int> running = procs_running();
    if (!running) return std::nullopt;
    // This thread, reading; with exclude_own every runnable thread of ours (this one among them).
    sum += std::max(0, *running - (exclude_own ? std::max(1, own_runnable_threads()) : 1));
  }
  MachineLoad load;
  load.other_runnable = samples > 0 ? sum / samples : 0;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  load.online_cpus = cpus > 0 ? static_cast<int>(cpus) : 1;
  return load;
}

bool machine_is_busy(const MachineLoad& load, int threads) {
  return load.online_cpus - load.other_runnable < threads - 0.5;
}

int threads_idle_cpus_hold(const MachineLoad& load, int threads) {
  if (!machine_is_busy(load, threads)) return threads;
  const double idle = static_cast<double>(load.online_cpus) - load.other_runnable;
  return std::clamp(static_cast<int>(std::floor(idle + 0.5)), 1, std::max(1, threads));
}

int threads_at_startup_load(int threads) {
  const std::optional<MachineLoad> load = startup_machine_load();
  return load ? threads_idle_cpus_hold(*load, threads) : threads;
}

std::string format_machine_load(const MachineLoad& load) {
  char text[96];
  std::snprintf(text, sizeof text, "%.1f other runnable threads on %d CPUs", load.other_runnable,
                load.online_cpus);
  return text;
}

std::optional<MachineLoad> parse_machine_load(const std::string& text) {
  MachineLoad load;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%lf other runnable threads on %d CPUs%n", &load.other_runnable,
                  &load.online_cpus, &consumed) != 2 ||
      consumed != static_cast<int>(text.size()) || load.other_runnable < 0 || load.online_cpus < 1)
    return std::nullopt;
  return load;
}

std::optional<MachineLoad> startup_machine_load() {
  if (const char* handed = std::getenv(kEnvironment))
    if (auto load = parse_machine_load(handed)) return load;
  const std::optional<MachineLoad> load = sample_machine_load();
  if (load) setenv(kEnvironment, format_machine_load(*load).c_str(), /*overwrite=*/1);
  return load;
}

}  // namespace detrain
