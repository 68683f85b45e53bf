// Validation as the trainer and `detrain val` run it: the split's records in letterboxed rect
// batches, its annotation file as ground truth (boxes, and keypoints for pose), and the
// validator configured from `val.*`. One definition, so `detrain val` on a checkpoint gives the
// trainer's numbers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/experiment.h"
#include "data/coco_records.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "eval/validate.h"

namespace detrain::model {
class YoloModelImpl;
}

namespace detrain::train {

class ValidationRun {
 public:
  // Reads the `split` records and annotations of `dataset` for `model` (its classes, keypoints
  // and end-to-end flag decide the postprocess and the IoU types).
  ValidationRun(const config::Experiment& experiment, const data::DatasetInfo& dataset,
                const std::string& split, const model::YoloModelImpl& model,
                const torch::Device& device, bool bf16);
  ValidationRun(const ValidationRun&) = delete;
  ValidationRun& operator=(const ValidationRun&) = delete;

  // One pass over the split.
  eval::ValidationResult run(model::YoloModelImpl& model, const eval::BatchObserver& observer = {});

  int64_t images() const { return static_cast<int64_t>(records_.size()); }

 private:
  std::vector<data::ImageRecord> records_;
  std::unique_ptr<data::Loader> loader_;
  eval::CocoGroundTruth gt_;
  std::unique_ptr<eval::Validator> validator_;
};

}  // namespace detrain::train
