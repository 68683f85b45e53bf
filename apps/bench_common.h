// Pieces every `detrain bench <kind>` shares: timing a callable (one warm-up, then the minimum
// and median over repeats) and the options for a model at a square input size.
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/timer.h"

namespace detrain::cli {

struct Timing {
  double min_ms = 0, median_ms = 0;
};

template <class F>
Timing time_it(int repeats, F&& run) {
  run();  // warm-up: allocator and kernel selection
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    Stopwatch watch;
    run();
    ms.push_back(watch.millis());
  }
  std::sort(ms.begin(), ms.end());
  return {ms.front(), ms[ms.size() / 2]};
}

// --model/-m, --imgsz (default shown as `default_imgsz`), --repeats/-r and --json.
inline void add_model_bench_options(CLI::App* app, std::string& arch, int64_t& imgsz, int& repeats,
                                    bool& json) {
  app->add_option("--model,-m", arch, "architecture (default model.arch / model.scale)");
  app->add_option("--imgsz", imgsz, "square input size (default " + std::to_string(imgsz) + ")")
      ->check(CLI::Range(32, 4096));
  app->add_option("--repeats,-r", repeats, "timed repeats after one warm-up (default 5)")
      ->check(CLI::Range(1, 1000));
  app->add_flag("--json", json, "print JSON instead of a table");
}

}  // namespace detrain::cli
