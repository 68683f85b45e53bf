// See validation_run.h.
#include "tasks/validation_run.h"

#include <spdlog/fmt/fmt.h>

#include "coco/annotations_json.h"
#include "common/timer.h"
#include "data/coco_records.h"
#include "data/yolo_split.h"
#include "loss/criterion.h"
#include "model/yolo_model.h"

namespace detrain::tasks {

ValidationRun::ValidationRun(const config::Experiment& x, const data::DatasetInfo& dataset,
                             const std::string& split, const model::YoloModelImpl& model,
                             const torch::Device& device, bool bf16, ValCaller caller)
    : device_(device) {
  // One read of the split's file for both the loader's records and the evaluator's ground
  // truth: the loader's requirements plus the evaluator's categories.
  coco::ReadOptions read = data::record_read_options(dataset);
  read.require_categories = true;
  const data::RecordOptions record_options = data::RecordOptions::from(x.data, false);
  coco::AnnotationTable table =
      data::read_split(dataset, split, read, record_options.cache_records);
  records_ = data::build_records(table, dataset, dataset.split(split), record_options).images;
  data::LoaderOptions lo =
      data::LoaderOptions::from(x.data, static_cast<uint64_t>(x.runtime.seed), /*train=*/false);
  if (caller == ValCaller::kStandalone) lo.batch = x.data.batch;
  if (x.val.batch > 0) lo.batch = x.val.batch;
  lo.stride = static_cast<int>(model.max_stride());
  lo.rect = x.val.rect;
  lo.pin_memory = device.is_cuda();
  lo.channels_last = model.memory_format() == model::MemoryFormat::kNhwc;  // set before this
  loader_ = std::make_unique<data::Loader>(dataset, records_, x.augment, lo);

  gt_ = std::move(table);
  infer::ValidationOptions vo;
  vo.nms = infer::nms_options(x.val);
  vo.one2one = !x.val.nms;
  vo.coco_ids = dataset.coco_ids;
  vo.keypoints = model.head()->options().pose() ? model.arch().kpt_shape[0] : 0;
  vo.oks_sigmas = dataset.oks_sigmas;
  if (vo.keypoints > 0) vo.keypoint_area_rule = keypoint_area_rule(dataset);
  for (const auto& r : records_) vo.image_ids.push_back(r.image_id);
  vo.bf16 = bf16;
  vo.device = device;
  validator_ = std::make_unique<infer::Validator>(gt_, vo.keypoints ? &gt_ : nullptr, vo);
}

infer::ValidationResult ValidationRun::run(model::YoloModelImpl& model,
                                           const infer::BatchObserver& observer,
                                           const loss::Criterion* criterion) {
  loader_->start_epoch(0, 0);
  std::optional<data::Batch> current;  // the batch whose outputs the raw observer sees
  torch::Tensor loss_sum;              // [n] float64 sum of the batches' items
  int64_t loss_batches = 0;
  double loss_s = 0;
  infer::RawOutputObserver on_raw;
  if (criterion)
    on_raw = [&](int64_t, const model::TrainOutput& raw, std::array<int64_t, 2> imgsz_hw) {
      Stopwatch clock;
      const loss::LossResult l = (*criterion)(raw, loss_targets(*current, device_), imgsz_hw);
      const torch::Tensor items = l.items.to(torch::kCPU, torch::kDouble);  // [n]
      loss_sum = loss_sum.defined() ? loss_sum + items : items;
      ++loss_batches;
      loss_s += clock.seconds();
    };
  infer::ValidationResult result = validator_->run(
      model,
      [&]() -> std::optional<infer::ValBatch> {
        current = loader_->next();
        if (!current) return std::nullopt;
        return infer::ValBatch{current->images, current->frames};
      },
      observer, on_raw);
  for (int64_t i = 0; loss_batches > 0 && i < loss_sum.size(0); ++i)
    result.losses.push_back(loss_sum[i].item<double>() / static_cast<double>(loss_batches));
  result.loss_s = loss_s;
  return result;
}

std::string keypoint_area_rule(const data::DatasetInfo& dataset) {
  if (dataset.format == data::DataFormat::kYolo)
    return fmt::format(
        "keypoint OKS area: {} x box w*h (YOLO labels have no segment area; COCO's person "
        "segments cover about {} of their box; docs/evaluator.md)",
        data::kPoseAreaPerBox, data::kPoseAreaPerBox);
  return "keypoint OKS area: each annotation's own area (COCO: its segment's)";
}

loss::Targets loss_targets(const data::Batch& batch, const torch::Device& device) {
  loss::Targets t;
  t.batch_idx = batch.batch_idx.to(device);
  t.cls = batch.cls.to(device);
  t.boxes_xywhn = batch.boxes_xywhn.to(device);
  if (batch.keypoints.defined()) t.keypoints = batch.keypoints.to(device);
  return t;
}

}  // namespace detrain::tasks
