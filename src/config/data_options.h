// `data.*`: which data set and how it is loaded. Owned by the data pipeline (src/data/).
#pragma once

#include "config/field.h"

namespace detrain::config {

struct DataOptions {
  std::string dataset = "data/coco-mini.yaml";
  std::string root;
  int64_t imgsz = 640;
  int64_t batch = 16;
  int64_t workers = 2;
  int64_t prefetch = 4;
  std::string cache = "none";
  bool cache_records = true;
  bool skip_missing = false;
  double fraction = 1.0;
  bool single_cls = false;

  template <class V>
  void visit(V& v) {
    v("dataset", dataset, "data-set descriptor YAML (data/*.yaml)");
    v("root", root, "data root replacing the descriptor's path (empty: the descriptor's)");
    v("imgsz", imgsz, "train/val image size in pixels (a multiple of 32)",
      Constraint::range(32, 8192));
    v("batch", batch, "images per training batch (validation uses twice this)",
      Constraint::range(1, 8192));
    v("workers", workers, "loader threads; 0 loads in the training thread",
      Constraint::range(0, 256));
    v("prefetch", prefetch, "batches prepared ahead per worker", Constraint::range(1, 64));
    v("cache", cache,
      "decoded, resized images: none, ram (one copy per machine), disk (kept across runs)",
      Constraint::one_of({"none", "ram", "disk"}));
    v("cache_records", cache_records,
      "keep parsed annotation records in a binary cache file for fast restarts");
    v("skip_missing", skip_missing, "skip (and count) images that are missing at scan time");
    v("fraction", fraction, "fraction of the training set to use", Constraint::range(1e-6, 1.0));
    v("single_cls", single_cls, "train every class as class 0");
  }
};

}  // namespace detrain::config
