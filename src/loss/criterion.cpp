// Criterion assembly; see criterion.h. Items are assembled in the reference's slot order
// (detect: box, cls, dfl/l1; pose: box, pose, kobj, cls, dfl/l1[, rle]); the end-to-end
// weights are applied to the batch-scaled vectors as float scalars, as the reference does.
#include "loss/criterion.h"

#include "coco/keypoint_sigmas.h"
#include "common/errors.h"
#include "compat/torch_compat.h"

namespace detrain::loss {

namespace {

AssignerOptions assigner_options(const model::HeadOptions& head, int64_t topk, int64_t topk2) {
  AssignerOptions o;
  o.topk = topk;
  o.topk2 = topk2;
  o.num_classes = head.nc;
  o.strides = head.strides;
  return o;
}

// The branch in float32 (a no-op for float32 outputs): reduced-precision BCE sums over
// anchors x classes and flow densities would lose the digits the reference keeps.
model::BranchOutput to_float(const model::BranchOutput& branch) {
  const auto cast = [](const torch::Tensor& t) { return t.defined() ? t.to(torch::kFloat) : t; };
  return {cast(branch.boxes), cast(branch.scores), cast(branch.kpts), cast(branch.kpts_sigma)};
}

}  // namespace

torch::Tensor oks_sigmas(int64_t num_keypoints, const std::vector<double>& sigmas) {
  if (!sigmas.empty()) {
    if (static_cast<int64_t>(sigmas.size()) != num_keypoints)
      throw ConfigError("OKS sigmas: " + std::to_string(sigmas.size()) + " values for " +
                        std::to_string(num_keypoints) +
                        " keypoints; give one sigma per keypoint in the data set's kpt_sigmas");
    return torch::tensor(sigmas, torch::kFloat);
  }
  if (num_keypoints == static_cast<int64_t>(coco::kPersonKeypoints)) {
    // COCO sigmas as the reference's loss holds them: the tenths as float32, / 10 in float32
    // (the evaluator divides in double; coco/keypoint_sigmas.h).
    std::vector<float> tenths(coco::kPersonSigmaTenths.begin(), coco::kPersonSigmaTenths.end());
    return torch::tensor(tenths, torch::kFloat) / 10.0;
  }
  return torch::ones({num_keypoints}, torch::kFloat) / static_cast<double>(num_keypoints);
}

Criterion::Criterion(const model::HeadOptions& head, const config::LossOptions& options,
                     torch::Tensor sigmas, model::RealNVP flow)
    : head_(head), options_(options) {
  TORCH_CHECK(!head.strides.empty(), "criterion: the head has no strides");
  const bool yolo26 = head.kind == model::HeadKind::kPose26;
  if (yolo26 && flow.is_empty())
    throw ModelError(
        "loss: a YOLO26 pose head needs its RealNVP flow for the RLE term; pass "
        "model->head()->flow() to make_criterion");
  const DetectionGains det{options.box, options.cls, options.dfl};
  const KeypointGains kpt{options.pose, options.kobj, options.rle};
  auto add_branch = [&](int64_t topk, int64_t topk2) {
    Branch branch{DetectionLoss(head.reg_max, assigner_options(head, topk, topk2), det), nullptr};
    if (head.pose())
      branch.keypoints = std::make_unique<KeypointLoss>(head.kpt_shape, sigmas, yolo26,
                                                        yolo26 ? flow : nullptr, kpt);
    branches_.push_back(std::move(branch));
  };
  add_branch(options.topk, 0);
  if (head.end2end) add_branch(options.topk_o2o, 1);

  const std::string third = head.reg_max > 1 ? "dfl" : "l1";
  if (head.pose()) {
    names_ = {"box", "pose", "kobj", "cls", third};
    if (yolo26) names_.push_back("rle");
  } else {
    names_ = {"box", "cls", third};
  }
  set_epoch(0, 1);
}

void Criterion::set_epoch(int64_t epoch, int64_t epochs) {
  weights_ = end2end_weights(epoch, epochs, options_.o2m_start, options_.o2m_end);
}

torch::Tensor Criterion::branch_vector(const Branch& branch, const model::BranchOutput& output,
                                       const std::vector<torch::Tensor>& feats,
                                       const PaddedTargets& gt, BranchReport& report) const {
  const auto pose_assigner =
      branch.keypoints ? branch.keypoints->assigner_keypoints(output) : std::nullopt;
  const auto det =
      branch.detection(output, feats, gt, replicas_, pose_assigner ? &*pose_assigner : nullptr);
  report.fg_mask = det.assignment.fg_mask;
  report.target_gt_idx = det.assignment.target_gt_idx;
  report.target_scores_sum = det.target_scores_sum.detach();
  std::vector<torch::Tensor> items;
  if (branch.keypoints) {
    const auto kpt = (*branch.keypoints)(output, det, gt);
    items = {det.box, kpt.pose, kpt.kobj, det.cls, det.dfl};
    if (kpt.rle.defined()) items.push_back(kpt.rle);
  } else {
    items = {det.box, det.cls, det.dfl};
  }
  auto vector = torch::stack(items);  // [n]
  report.items = vector.detach();
  return vector;
}

LossResult Criterion::operator()(const model::TrainOutput& output, const Targets& targets,
                                 std::array<int64_t, 2> imgsz_hw) const {
  const auto& feats = output.feats;
  const auto feats_hw = input_size_hw(feats, head_.strides[0]);
  TORCH_CHECK(feats_hw == imgsz_hw, "loss: input ", imgsz_hw[0], "x", imgsz_hw[1],
              " does not match the feature maps (", feats_hw[0], "x", feats_hw[1], ")");
  const auto& first = output.one2many.defined() ? output.one2many : output.one2one;
  TORCH_CHECK(first.defined(), "loss: the model output has no branch (fused model?)");
  const auto batch_size = first.scores.size(0);
  // The loss runs in float32 even inside the trainer's autocast scope.
  compat::AutocastGuard full_precision(first.scores.device().type(), torch::kBFloat16, false);
  const auto gt = pad_targets(targets, batch_size, imgsz_hw, first.scores.to(torch::kFloat));

  LossResult result;
  result.names = names_;
  std::vector<torch::Tensor> vectors;
  const model::BranchOutput* outputs[] = {&output.one2many, &output.one2one};
  const char* labels[] = {"one2many", "one2one"};
  for (size_t i = 0; i < branches_.size(); ++i) {
    TORCH_CHECK(outputs[i]->defined(), "loss: the model output has no ", labels[i], " branch");
    BranchReport report;
    report.name = labels[i];
    vectors.push_back(branch_vector(branches_[i], to_float(*outputs[i]), feats, gt, report) *
                      static_cast<double>(batch_size));
    result.branches.push_back(std::move(report));
  }
  if (vectors.size() == 2) {
    result.vector = vectors[0] * weights_.o2m + vectors[1] * weights_.o2o;
    result.items = result.branches[1].items;
  } else {
    result.vector = vectors[0];
    result.items = result.branches[0].items;
  }
  result.total = result.vector.sum();
  if (replicas_.active()) result.total = result.total * static_cast<double>(replicas_.world_size);
  return result;
}

std::unique_ptr<Criterion> make_criterion(const model::HeadOptions& head,
                                          const config::LossOptions& options,
                                          const std::vector<double>& sigmas, model::RealNVP flow) {
  const auto k = head.pose() ? head.kpt_shape[0] : 0;
  return std::make_unique<Criterion>(
      head, options, head.pose() ? oks_sigmas(k, sigmas) : torch::Tensor(), std::move(flow));
}

}  // namespace detrain::loss
