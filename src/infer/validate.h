// Validation of a model on letterboxed batches: inference (BF16 autocast when asked, eval
// mode), postprocess (NMS, or the one-to-one top-k of end-to-end models), predictions mapped
// back to original pixels and COCO category ids, and the COCO evaluator for boxes (and
// keypoints for pose). Differs from the reference's per-epoch validation: the metrics are
// always COCO's (pycocotools-exact), never the internal 101-point trapezoid AP.
#pragma once

#include <torch/torch.h>

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "eval/coco_eval.h"
#include "infer/postprocess.h"
#include "model/heads.h"

namespace detrain::model {
class YoloModelImpl;
}

namespace detrain::infer {

// One batch as the validator needs it (the trainer and `detrain val` adapt the loader's batch).
struct ValBatch {
  torch::Tensor images;                      // [B, 3, H, W] uint8 RGB, letterboxed
  std::vector<geometry::ImageFrame> frames;  // [B] how each image sits in `images`
};

struct ValidationOptions {
  NmsOptions nms;                  // conf / iou / max_det
  bool one2one = false;            // end-to-end models: score the one-to-one top-k (val.nms
                                   // false) instead of the one-to-many branch + NMS
  std::vector<int64_t> coco_ids;   // [nc] contiguous class index -> COCO category id
  int64_t keypoints = 0;           // K; 0 for detection models
  std::vector<double> oks_sigmas;  // [K] keypoint evaluation sigmas (empty: COCO's 17)
  std::vector<int64_t> image_ids;  // images to score (empty: every GT image)
  bool bf16 = true;                // autocast the forward pass
  torch::Device device = torch::kCPU;
  eval::RecordRounding rounding;   // what predictions.json holds (and what is scored)
  int eval_threads = 0;            // COCO evaluator threads (0: every core)
  std::string keypoint_area_rule;  // printed under the table of a pose validation
};

struct ValidationResult {
  eval::CocoEvalResult box;                       // bbox stats (12)
  std::optional<eval::CocoEvalResult> keypoints;  // keypoint stats (10), pose models only
  std::vector<eval::CocoRecord> records;          // every prediction, in image order
  int64_t images = 0;
  double inference_s = 0;    // forward pass and NMS / top-k
  double postprocess_s = 0;  // back to original pixels and COCO records
  double evaluate_s = 0;
  std::vector<double> losses;      // [n] loss items averaged over batches (empty unless asked for)
  double loss_s = 0;               // computing `losses`
  std::string keypoint_area_rule;  // ValidationOptions' (pose models only)

  // 0.9 AP + 0.1 AP50 of boxes, plus the same of keypoints for pose models.
  double fitness() const;
};

// One batch through the model and the postprocess: images [B, 3, H, W] uint8 RGB ->
// detections per image in network-input pixels (one-to-one top-k for end-to-end models when
// `one2one`, NMS otherwise). The model must be in eval mode. `raw`, when given, receives the head's
// raw branch outputs of the same forward pass (what validation losses are computed from).
std::vector<ImageDetections> detect_batch(model::YoloModelImpl& model, const torch::Tensor& images,
                                          const NmsOptions& nms, bool one2one, bool bf16,
                                          const torch::Device& device,
                                          model::TrainOutput* raw = nullptr);

// Called per batch with the detections in network-input pixels (for val_pred*.jpg plots).
using BatchObserver =
    std::function<void(int64_t batch_index, const ValBatch&, const std::vector<ImageDetections>&)>;

// Called per batch, after the forward pass and outside autocast, with the head's raw branch
// outputs (eval mode, no sigma heads) and the input's (height, width) in pixels: the reference
// computes its validation losses from exactly these.
using RawOutputObserver = std::function<void(int64_t batch_index, const model::TrainOutput& raw,
                                             std::array<int64_t, 2> imgsz_hw)>;

class Validator {
 public:
  // `box_gt` scores boxes; `keypoint_gt` (pose) scores keypoints and may be the same set.
  // Both must outlive the validator. Throws ConfigError/DataError when the parameters do not
  // fit the ground truth (e.g. sigmas of the wrong length).
  Validator(const eval::CocoGroundTruth& box_gt, const eval::CocoGroundTruth* keypoint_gt,
            ValidationOptions options);
  ~Validator();
  Validator(Validator&&) noexcept;
  Validator& operator=(Validator&&) noexcept;

  // Runs `model` (switched to eval mode; the caller restores train mode) on every batch that
  // `next_batch` yields until it returns nullopt.
  ValidationResult run(model::YoloModelImpl& model,
                       const std::function<std::optional<ValBatch>()>& next_batch,
                       const BatchObserver& observer = {},
                       const RawOutputObserver& raw_observer = {}) const;

  const ValidationOptions& options() const { return options_; }
  // BF16 autocast for the following runs (train.precision=auto's re-check while training).
  void set_bf16(bool bf16) { options_.bf16 = bf16; }

 private:
  ValidationOptions options_;
  std::unique_ptr<eval::CocoEvaluator> box_evaluator_;
  std::unique_ptr<eval::CocoEvaluator> keypoint_evaluator_;
};

// Stats of one evaluation as a fixed-width table (one row per IoU type: AP, AP50, AP75, APs,
// APm, APl, AR100), the table printed after each validation, with the keypoint area rule
// under it for pose models.
std::string stats_table(const ValidationResult& result);

}  // namespace detrain::infer
