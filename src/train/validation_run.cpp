// See validation_run.h.
#include "train/validation_run.h"

#include "data/coco_records.h"
#include "eval/coco_json.h"
#include "model/yolo_model.h"

namespace detrain::train {

ValidationRun::ValidationRun(const config::Experiment& x, const data::DatasetInfo& dataset,
                             const std::string& split, const model::YoloModelImpl& model,
                             const torch::Device& device, bool bf16) {
  records_ = data::load_records(dataset, split, data::RecordOptions::from(x.data, false)).images;
  data::LoaderOptions lo =
      data::LoaderOptions::from(x.data, static_cast<uint64_t>(x.runtime.seed), /*train=*/false);
  if (x.val.batch > 0) lo.batch = x.val.batch;
  lo.stride = static_cast<int>(model.max_stride());
  lo.pin_memory = device.is_cuda();
  loader_ = std::make_unique<data::Loader>(dataset, records_, x.augment, lo);

  gt_ = eval::load_ground_truth_json(dataset.split(split).annotations);
  eval::ValidationOptions vo;
  vo.nms = eval::nms_options(x.val);
  vo.coco_ids = dataset.coco_ids;
  vo.keypoints = model.head()->options().pose() ? model.arch().kpt_shape[0] : 0;
  vo.oks_sigmas = dataset.oks_sigmas;
  for (const auto& r : records_) vo.image_ids.push_back(r.image_id);
  vo.bf16 = bf16;
  vo.device = device;
  validator_ = std::make_unique<eval::Validator>(gt_, vo.keypoints ? &gt_ : nullptr, vo);
}

eval::ValidationResult ValidationRun::run(model::YoloModelImpl& model,
                                          const eval::BatchObserver& observer) {
  loader_->start_epoch(0, 0);
  return validator_->run(
      model,
      [&]() -> std::optional<eval::ValBatch> {
        std::optional<data::Batch> b = loader_->next();
        if (!b) return std::nullopt;
        return eval::ValBatch{b->images, b->frames};
      },
      observer);
}

}  // namespace detrain::train
