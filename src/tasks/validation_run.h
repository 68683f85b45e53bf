// Validation as the trainer and `detrain val` run it: the split's records in the reference's
// rect batches (data/pipeline.h: sorted by aspect ratio, one shape per batch, padded by half a
// stride; or square with val.rect=false), its annotation file as ground truth (boxes, and
// keypoints for pose; images dropped at scan are in neither), and the validator configured
// from `val.*`. One definition, so `detrain val` on a checkpoint gives the
// trainer's numbers. Validation losses are the reference's: the training criterion on each val
// batch's targets and the eval-mode head outputs, averaged over batches.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/experiment.h"
#include "data/coco_records.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "infer/validate.h"

namespace detrain::model {
class YoloModelImpl;
}
namespace detrain::loss {
class Criterion;
struct Targets;
}  // namespace detrain::loss

namespace detrain::tasks {

// Who validates: the batch size of `val.batch=0` follows the reference's callers, `yolo val`
// (its `batch`, data.batch here) and the trainer (twice its training batch).
enum class ValCaller { kTrainer, kStandalone };

// The line printed under the table of a pose validation: which area scales OKS.
std::string keypoint_area_rule(const data::DatasetInfo& dataset);

class ValidationRun {
 public:
  // Reads the `split` records and annotations of `dataset` for `model` (its classes, keypoints
  // and end-to-end flag decide the postprocess and the IoU types).
  ValidationRun(const config::Experiment& experiment, const data::DatasetInfo& dataset,
                const std::string& split, const model::YoloModelImpl& model,
                const torch::Device& device, bool bf16, ValCaller caller = ValCaller::kTrainer);
  ValidationRun(const ValidationRun&) = delete;
  ValidationRun& operator=(const ValidationRun&) = delete;

  // One pass over the split. With `criterion`, the result's `losses` hold its items (in its
  // names() order) averaged over the batches.
  infer::ValidationResult run(model::YoloModelImpl& model,
                              const infer::BatchObserver& observer = {},
                              const loss::Criterion* criterion = nullptr);

  int64_t images() const { return static_cast<int64_t>(records_.size()); }
  // The precision of the following runs: the training's, when train.precision=auto switches it.
  void set_bf16(bool bf16) { validator_->set_bf16(bf16); }
  // The split's images with their ground truth (the plots match detections against them).
  const std::vector<data::ImageRecord>& records() const { return records_; }

 private:
  std::vector<data::ImageRecord> records_;
  std::unique_ptr<data::Loader> loader_;
  eval::CocoGroundTruth gt_;
  std::unique_ptr<infer::Validator> validator_;
  torch::Device device_;
};

// A loader batch's ground truth as the criterion takes it, on `device`.
loss::Targets loss_targets(const data::Batch& batch, const torch::Device& device);

}  // namespace detrain::tasks
