// Loss parity against the reference (Ultralytics 8.4.190, tests/golden/README.md): reference
// weights loaded by name, the saved input through detrain's model in train mode, the criterion on
// the saved targets; then loss total / vector / items, each branch's assignment and every
// parameter's gradient norm and sum after backward must match E2ELoss / v8DetectionLoss /
// PoseLoss26.
#include <catch2/catch.hpp>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "loss/criterion.h"
#include "model/safetensors.h"
#include "model/state_dict.h"
#include "model/tensor_checks.h"
#include "model/yolo_model.h"
#include "test_support.h"

using namespace detrain;

namespace {

// README section 7: loss totals and items rel 1e-5, 5e-5 across conv backends (our convs are
// LibTorch's, the reference's PyTorch's, and head outputs already differ by ~1e-5 relative).
constexpr double kLossRel = 5e-5;
// Gradients: |diff| <= 1e-4 * ref + 1e-5 (l2norm) and <= 1e-4 * abs_sum + 1e-5 (sum), README 7.
constexpr double kGradRel = 1e-4;
constexpr double kGradAbs = 1e-5;
constexpr double kZeroRel = 1e-6;

// BN biases whose true gradient is exactly 0 (a later train-mode BN cancels any shift), as the
// generator found them by a float64 replay (metadata structurally_zero_grads): the stored fp32
// values are round-off, so only the absolute floor applies to them.
std::set<std::string> structurally_zero(const model::SafetensorsFile& loss_file) {
  std::set<std::string> names;
  for (const auto& row : nlohmann::json::parse(loss_file.metadata.at("structurally_zero_grads")))
    names.insert(row[0].get<std::string>());
  return names;
}

struct Case {
  std::string name, arch;
  int64_t nc;
  bool end2end;
};

loss::Targets golden_targets(const model::SafetensorsFile& file) {
  loss::Targets t;
  t.batch_idx = file.at("targets.batch_idx").to(torch::kLong);
  t.cls = file.at("targets.cls").view({-1}).to(torch::kLong);
  t.boxes_xywhn = file.at("targets.bboxes");
  if (file.contains("targets.keypoints")) t.keypoints = file.at("targets.keypoints");
  return t;
}

void close(const std::string& name, const torch::Tensor& ours, const torch::Tensor& ref,
           double rel) {
  const auto report = test::check_close(name, ours.view({-1}), ref.view({-1}), rel);
  INFO(report.details);
  CHECK(report.ok);
}

void check_equal(const std::string& name, const torch::Tensor& ours, const torch::Tensor& ref) {
  REQUIRE(ours.sizes() == ref.sizes());
  const auto where = ours.to(ref.scalar_type()).ne(ref).nonzero();
  std::ostringstream details;
  for (int64_t i = 0; i < std::min<int64_t>(where.size(0), 5); ++i) {
    const auto b = where[i][0].item<int64_t>(), a = where[i][1].item<int64_t>();
    details << "\n  image " << b << " anchor " << a << ": ours " << ours[b][a].item<int64_t>()
            << ", reference " << ref[b][a].item<int64_t>();
  }
  INFO(name << ": " << where.size(0) << " anchors differ" << details.str());
  CHECK(where.size(0) == 0);
}

void check_branch(const loss::BranchReport& ours, const model::SafetensorsFile& ref,
                  const std::string& prefix, const std::string& items_key) {
  check_equal(prefix + "fg_mask", ours.fg_mask, ref.at(prefix + "fg_mask"));
  check_equal(prefix + "target_gt_idx", ours.target_gt_idx, ref.at(prefix + "target_gt_idx"));
  close(prefix + "target_scores_sum", ours.target_scores_sum, ref.at(prefix + "target_scores_sum"),
        kLossRel);
  if (!items_key.empty()) close(items_key, ours.items, ref.at(items_key), kLossRel);
}

// Per-parameter gradient l2 norm and sum (float64 accumulation, as stored) against the file;
// prints the worst entries by margin.
void check_gradients(model::YoloModelImpl& net, const model::SafetensorsFile& ref) {
  const auto names =
      nlohmann::json::parse(ref.metadata.at("grad_param_names")).get<std::vector<std::string>>();
  const auto infos = net.param_infos();
  REQUIRE(infos.size() == names.size());
  const auto l2 = ref.at("grad.l2norm"), sum = ref.at("grad.sum"), abs_sum = ref.at("grad.abs_sum");
  struct Miss {
    double margin;
    std::string text;
  };
  const auto zero_names = structurally_zero(ref);
  // A structurally zero gradient is fp32 round-off on both sides, not a value to match: ours must
  // be noise too, |g| <= kZeroRel x the largest reference gradient norm (fp32 sums of ~1e4 terms
  // leave ~1e-7..1e-6 of the gradient scale; a real gradient there is >= 1e-3 of it).
  const double largest_l2 = l2.max().item<double>();
  std::vector<Miss> misses;
  double worst_ratio = 0;
  std::string worst_name;
  int64_t compared = 0;
  for (size_t i = 0; i < infos.size(); ++i) {
    const auto& info = infos[i];
    REQUIRE(info.name == names[i]);
    const double ref_l2 = l2[i].item<double>();
    const auto grad = info.param.grad();
    if (ref_l2 < 0) {  // no grad in the reference (frozen DFL projection)
      if (grad.defined() && grad.abs().sum().item<double>() != 0)
        misses.push_back({1e9, info.name + ": reference has no gradient, ours is non-zero"});
      continue;
    }
    const auto g =
        grad.defined() ? grad.to(torch::kFloat64) : torch::zeros_like(info.param, torch::kFloat64);
    const double our_l2 = g.norm().item<double>(), our_sum = g.sum().item<double>();
    const bool zero = zero_names.count(info.name) > 0;
    const double l2_bound = zero ? kZeroRel * largest_l2 : kGradRel * ref_l2 + kGradAbs;
    const double sum_bound =
        zero ? kZeroRel * largest_l2 : kGradRel * abs_sum[i].item<double>() + kGradAbs;
    const double l2_margin = (zero ? our_l2 : std::abs(our_l2 - ref_l2)) / l2_bound;
    const double sum_margin =
        (zero ? std::abs(our_sum) : std::abs(our_sum - sum[i].item<double>())) / sum_bound;
    if (std::max(l2_margin, sum_margin) > worst_ratio) {
      std::ostringstream text;
      text << std::setprecision(9) << info.name << " (l2 " << our_l2 << " vs " << ref_l2 << ", sum "
           << our_sum << " vs " << sum[i].item<double>() << ")";
      worst_name = text.str();
    }
    worst_ratio = std::max({worst_ratio, l2_margin, sum_margin});
    ++compared;
    if (l2_margin > 1 || sum_margin > 1) {
      std::ostringstream text;
      text << std::setprecision(9) << info.name << ": l2 " << our_l2 << " vs " << ref_l2 << ", sum "
           << our_sum << " vs " << sum[i].item<double>();
      misses.push_back({std::max(l2_margin, sum_margin), text.str()});
    }
  }
  std::sort(misses.begin(), misses.end(), [](auto& a, auto& b) { return a.margin > b.margin; });
  std::ostringstream details;
  for (size_t i = 0; i < std::min<size_t>(misses.size(), 8); ++i)
    details << "\n  " << misses[i].text << " (" << misses[i].margin << " x tolerance)";
  INFO(misses.size() << " of " << compared << " gradients outside tolerance" << details.str());
  CHECK(misses.empty());
  std::cout << "  gradients: " << compared << " compared, worst " << worst_ratio
            << " x tolerance: " << worst_name << std::endl;
}

void check_case(const Case& c) {
  const std::string weights_path = test::golden(c.name + "_weights.safetensors");
  const std::string forward_path = test::golden(c.name + "_forward.safetensors");
  const std::string loss_path = test::golden(c.name + "_loss.safetensors");
  const auto forward = model::read_safetensors(forward_path);
  const auto ref = model::read_safetensors(loss_path);

  model::BuildOptions options;
  options.arch = c.arch;
  options.scale = "n";
  options.nc = c.nc;
  model::YoloModel net(options);
  model::load_weights(*net, weights_path);
  net->train();
  const auto out = net->forward_train(forward.at("input"));  // [2, 3, 128, 128]

  const auto& head = net->head()->options();
  auto criterion = loss::make_criterion(head, config::LossOptions{}, {}, net->head()->flow());
  criterion->set_epoch(0, 100);  // the reference criterion at epoch 0 of 100 (hyp.epochs)
  const auto result = (*criterion)(out, golden_targets(ref), {128, 128});

  close("loss.total", result.total, ref.at("loss.total"), kLossRel);
  close("loss.vector", result.vector, ref.at("loss.vector"), kLossRel);
  close("loss.items", result.items, ref.at("loss.items"), kLossRel);
  if (c.end2end) {
    REQUIRE(result.branches.size() == 2);
    check_branch(result.branches[0], ref, "assign.o2m.", "loss.o2m_items");
    check_branch(result.branches[1], ref, "assign.o2o.", "loss.o2o_items");
  } else {
    REQUIRE(result.branches.size() == 1);
    check_branch(result.branches[0], ref, "assign.", "");
  }
  std::cout << c.name << " loss: total " << std::setprecision(9) << result.total.item<double>()
            << " (reference " << ref.at("loss.total").item<double>() << "), items " << result.items
            << std::endl;

  result.total.backward();
  check_gradients(*net, ref);
}

}  // namespace

TEST_CASE("yolo26n E2E detection loss matches the reference", "[parity][loss]") {
  check_case({"yolo26n", "models/yolo26.yaml", 80, true});
}

TEST_CASE("yolo26n-pose E2E pose loss with RLE matches the reference", "[parity][loss]") {
  check_case({"yolo26n-pose", "models/yolo26-pose.yaml", 1, true});
}

TEST_CASE("yolo11n detection loss with DFL matches the reference", "[parity][loss]") {
  check_case({"yolo11n", "models/yolo11.yaml", 80, false});
}

TEST_CASE("yolo11n-pose pose loss matches the reference", "[parity][loss]") {
  check_case({"yolo11n-pose", "models/yolo11-pose.yaml", 1, false});
}

TEST_CASE("yolov8n detection loss with DFL matches the reference", "[parity][loss]") {
  check_case({"yolov8n", "models/yolov8.yaml", 80, false});
}

TEST_CASE("yolov8n-pose pose loss matches the reference", "[parity][loss]") {
  check_case({"yolov8n-pose", "models/yolov8-pose.yaml", 1, false});
}
