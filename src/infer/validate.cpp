// Validation loop: batches -> model -> postprocess -> COCO records -> evaluator. See validate.h.
#include "infer/validate.h"

#include <spdlog/fmt/fmt.h>

#include "common/progress.h"
#include "common/timer.h"
#include "compat/torch_compat.h"
#include "model/channels_last.h"
#include "model/yolo_model.h"

namespace detrain::infer {

using eval::BoxXywh;
using eval::CocoDetections;
using eval::CocoEvalOptions;
using eval::CocoEvalResult;
using eval::CocoEvaluator;
using eval::CocoGroundTruth;
using eval::CocoParams;
using eval::CocoRecord;
using eval::IouType;

namespace {

CocoParams params_for(IouType type, const ValidationOptions& options) {
  CocoParams params = CocoParams::defaults(type);
  params.image_ids = options.image_ids;
  if (type == IouType::kKeypoints && !options.oks_sigmas.empty())
    params.keypoint_sigmas = options.oks_sigmas;
  return params;
}

// 0.9 AP + 0.1 AP50 (stats 0 and 1 of either IoU type).
double coco_fitness(const CocoEvalResult& r) {
  if (r.stats.size() < 2) return 0;
  return 0.9 * std::max(r.stats[0], 0.0) + 0.1 * std::max(r.stats[1], 0.0);
}

void add_record(CocoDetections& detections, const CocoRecord& r) {
  const BoxXywh box{r.bbox[0], r.bbox[1], r.bbox[2], r.bbox[3]};
  if (r.keypoints.empty())
    detections.add(r.image_id, r.category_id, box, r.score);
  else
    detections.add(r.image_id, r.category_id, box, r.score, r.keypoints.data());
}

}  // namespace

double ValidationResult::fitness() const {
  return coco_fitness(box) + (keypoints ? coco_fitness(*keypoints) : 0.0);
}

Validator::Validator(const CocoGroundTruth& box_gt, const CocoGroundTruth* keypoint_gt,
                     ValidationOptions options)
    : options_(std::move(options)) {
  box_evaluator_ = std::make_unique<CocoEvaluator>(box_gt, params_for(IouType::kBbox, options_),
                                                   CocoEvalOptions{options_.eval_threads});
  if (keypoint_gt && options_.keypoints > 0)
    keypoint_evaluator_ =
        std::make_unique<CocoEvaluator>(*keypoint_gt, params_for(IouType::kKeypoints, options_),
                                        CocoEvalOptions{options_.eval_threads});
}

Validator::~Validator() = default;
Validator::Validator(Validator&&) noexcept = default;
Validator& Validator::operator=(Validator&&) noexcept = default;

ValidationResult Validator::run(model::YoloModelImpl& model,
                                const std::function<std::optional<ValBatch>()>& next_batch,
                                const BatchObserver& observer,
                                const RawOutputObserver& raw_observer) const {
  torch::NoGradGuard no_grad;
  model.eval();
  const auto& o = options_;
  ValidationResult result;
  CocoDetections detections;
  if (o.keypoints > 0) detections.keypoints_per_instance = static_cast<int>(o.keypoints);

  int64_t batch_index = 0;
  while (std::optional<ValBatch> batch = next_batch()) {
    Stopwatch inference;
    model::TrainOutput raw;
    const std::vector<ImageDetections> per_image = detect_batch(
        model, batch->images, o.nms, o.one2one, o.bf16, o.device, raw_observer ? &raw : nullptr);
    result.inference_s += inference.seconds();
    if (raw_observer)
      raw_observer(batch_index, raw, {batch->images.size(2), batch->images.size(3)});
    Stopwatch post;
    TORCH_CHECK(per_image.size() == batch->frames.size(), "validation batch of ",
                batch->frames.size(), " frames gave ", per_image.size(), " detection sets");
    if (observer) observer(batch_index, *batch, per_image);
    for (size_t i = 0; i < per_image.size(); ++i) {
      const geometry::ImageFrame& frame = batch->frames[i];
      const ImageDetections original = to_original_pixels(per_image[i], frame);
      for (CocoRecord& r : to_coco_records(original, frame.image_id, o.coco_ids, o.rounding)) {
        add_record(detections, r);
        result.records.push_back(std::move(r));
      }
    }
    result.images += static_cast<int64_t>(per_image.size());
    result.postprocess_s += post.seconds();
    ++batch_index;
  }

  Stopwatch evaluate;
  result.box = box_evaluator_->evaluate(detections);
  if (keypoint_evaluator_) {
    result.keypoints = keypoint_evaluator_->evaluate(detections);
    result.keypoint_area_rule = o.keypoint_area_rule;
  }
  result.evaluate_s = evaluate.seconds();
  return result;
}

std::vector<ImageDetections> detect_batch(model::YoloModelImpl& model, const torch::Tensor& images,
                                          const NmsOptions& nms, bool one2one, bool bf16,
                                          const torch::Device& device, model::TrainOutput* raw) {
  torch::NoGradGuard no_grad;
  const torch::Tensor input =  // [B, 3, H, W] float in [0, 1], in the model's memory format
      model::image_input(images, device, model.memory_format());
  model::EvalOutput out;
  {
    std::optional<compat::AutocastGuard> autocast;
    if (bf16) autocast.emplace(device.type(), torch::kBFloat16);
    out = model.forward_eval(input, nms.max_det, one2one, nms.agnostic);
  }
  if (raw) *raw = out.raw;
  if (out.end2end)
    return end2end_postprocess(out.detections.to(torch::kFloat).cpu(), nms.conf, nms.max_det);
  return nms_postprocess(out.decoded.to(torch::kFloat), model.arch().nc, nms);
}

std::string stats_table(const ValidationResult& result) {
  const std::vector<std::string> header = {"COCO", "AP", "AP50", "AP75", "APs", "APm", "APl", "AR"};
  std::vector<std::vector<std::string>> rows;
  auto row = [&](const std::string& name, const CocoEvalResult& r, bool keypoints) {
    // pycocotools' order: bbox AP AP50 AP75 APs APm APl AR1 AR10 AR100 ... (AR is AR@100);
    // keypoints AP AP50 AP75 APm APl AR ... (no small range; AR is AR@20).
    const auto& s = r.stats;
    // pycocotools' -1 (no ground truth in that range) prints as "-", like a column that
    // does not apply.
    auto at = [&](size_t i) { return i < s.size() && s[i] >= 0 ? fixed(s[i], 3) : "-"; };
    if (keypoints)
      rows.push_back({name, at(0), at(1), at(2), "-", at(3), at(4), at(5)});
    else
      rows.push_back({name, at(0), at(1), at(2), at(3), at(4), at(5), at(8)});
  };
  row("box", result.box, false);
  if (result.keypoints) row("keypoints", *result.keypoints, true);
  std::string table = format_table(header, rows);
  if (result.keypoints && !result.keypoint_area_rule.empty())
    table += (table.empty() || table.back() == '\n' ? "" : "\n") + result.keypoint_area_rule + "\n";
  return table;
}

}  // namespace detrain::infer
