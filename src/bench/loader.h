// `detrain bench loader`: throughput of the training data pipeline on a real split. Per worker
// count: a fresh loader per repeat (so every sample decodes its own image, as on a data set
// larger than the mosaic cache), samples/s and ms per sample per worker; in the same run a
// decode-only baseline (read + decode + long-side resize, one thread) and the transform chain
// on cached images; then RSS over repeated epochs of one loader. With ranks > 1, memory per
// rank: the loader alone as one process and then as N processes side by side (rank r of N, the
// data.cache of the config, e.g. data.cache=ram for one copy per machine), each reporting its
// resident set (RSS) and proportional set (PSS: shared pages split between their users) while
// all of them are alive.
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
  int64_t ranks = 1;        // > 1: the memory-per-rank check with that many
  std::string config_file;  // passed on to the rank processes with the overrides
  std::vector<std::string> overrides;
  // Set in a rank process of that check (hidden options): its rank and where it reports.
  std::optional<int64_t> as_rank;
  std::string rank_dir;
};

Report bench_loader(const config::ResolvedConfig& resolved, const LoaderBenchOptions& options);

}  // namespace detrain::bench
