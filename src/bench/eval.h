// `detrain bench eval`: times the COCO evaluator on a synthetic COCO-val-like case generated in
// memory (default: 5000 images, 80 categories, ~36k GT with ~1% crowd, 100 detections per
// image = 500k results). The results JSON is written and loaded back to time the loader;
// `write_json` keeps both files so an outside reference (pycocotools) can run the same case.
#pragma once

#include <string>

#include "bench/report.h"
#include "eval/coco_synth.h"

namespace detrain::bench {

struct EvalBenchOptions {
  eval::SynthGtOptions gt;  // images, categories, seed (the detections use seed + 1)
  int dets_per_image = 100;
  int threads = 0;         // loader and evaluator threads; 0 = every core
  int repeat = 3;          // runs; the median is reported
  std::string write_json;  // keep gt.json and results.json in this folder ("" = a scratch one)
};

Report bench_eval(const EvalBenchOptions& options);

}  // namespace detrain::bench
