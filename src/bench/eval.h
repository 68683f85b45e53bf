// `detrain bench eval`: times the COCO evaluator on a synthetic COCO-val-like case generated in
// memory (bbox: 5000 images, 80 categories, ~36k GT with ~1% crowd, 100 detections per image =
// 500k results; keypoints: the same images with one person category, 17 keypoints per
// annotation and 20 results per image). The results JSON is written and loaded back to time
// the loader; `write_json` keeps both files so an outside reference can run the same case.
//
// Besides the in-process steps it times whole processes on the same two files, in the same
// run: `detrain eval` itself (wall, peak RSS, its own stage times) and, where the reference
// Python has them installed, hotcoco and faster-coco-eval (pip packages that scripts/setup.sh
// puts in .venv-ref), each checked against the in-process stats. The processes alternate round
// by round, and the hotcoco / detrain ratio is also given per round. Nothing is a stored
// constant.
#pragma once

#include <string>

#include "bench/report.h"
#include "eval/coco_synth.h"

namespace detrain::bench {

struct EvalBenchOptions {
  eval::SynthGtOptions gt;        // images, categories, seed (the detections use seed + 1)
  std::string iou_type = "bbox";  // or "keypoints": one person category with 17 keypoints
  int dets_per_image = 0;         // 0: 100 for bbox, 20 (the keypoint maxDets) for keypoints
  int threads = 0;                // loader and evaluator threads; 0 = every core
  int repeat = 3;                 // runs; the median is reported
  std::string write_json;  // keep gt.json and results.json in this folder ("" = a scratch one)
  bool processes = true;   // also time whole processes (detrain eval and the references)
};

Report bench_eval(const EvalBenchOptions& options);

// The Python that may have the reference evaluators: $DETRAIN_REFERENCE_PYTHON, else the
// .venv-ref (scripts/setup.sh) beside or above this executable's folder, or in the current
// folder; "" when none is found.
std::string reference_python();

}  // namespace detrain::bench
