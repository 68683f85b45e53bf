// `detrain bench loader`: throughput of the training data pipeline on a real split. Per worker
// count: a fresh loader per repeat (so every sample decodes its own image, as on a data set
// larger than the mosaic cache), samples/s and ms per sample per worker; in the same run a
// decode-only baseline (read + decode + long-side resize, one thread) and the transform chain
// on cached images; then RSS over repeated epochs of one loader.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/report.h"
#include "config/config.h"

namespace detrain::bench {

struct LoaderBenchOptions {
  std::string data;  // data-set descriptor; "" = data.dataset of the config
  std::string split = "train";
  int64_t imgsz = 640;
  int64_t batch = 16;
  std::vector<int64_t> workers = {1, 2};
  int repeats = 3;  // best kept
  int epochs = 5;   // of the RSS check
  bool no_mosaic = false;
  // A reference's CPU ms per sample measured elsewhere (one process), to compare against; none
  // is built in, since a figure from another machine and day says little about this one.
  std::optional<double> reference_ms;
};

Report bench_loader(const config::ResolvedConfig& resolved, const LoaderBenchOptions& options);

}  // namespace detrain::bench
