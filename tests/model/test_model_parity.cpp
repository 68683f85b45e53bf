// Forward parity against the reference (Ultralytics 8.4.190; goldens from
// tests/golden/gen_models.py, schema in tests/golden/README.md): the golden state dicts load
// strictly by name, and the same input gives the same train-mode head outputs and features, the
// same BN running-stat update, the same decoded inference tensor and the same end-to-end top-k set.
// Parameter order is checked against the reference's own listing (optimizer groups:
// tests/optim/test_param_groups.cpp).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "model/safetensors.h"
#include "model/state_dict.h"
#include "model/tensor_checks.h"
#include "model/yolo_model.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::model;

namespace {

// Tolerances from the reference against itself (fp32 at 1 and 2 threads;
// our kernels sum in another order, so the same kind of noise is expected):
// train-mode heads and features: measured <= 1.5e-5 x max|ref|; 1e-4 leaves room for kernels.
constexpr double kTrainRel = 1e-4;
// BN running stats are averages over many elements: measured 5.6e-7 x max|ref|.
constexpr double kRunningStatsRel = 1e-5;
// The eval path runs through perturbed running stats that amplify fp32 noise at P5: evaluating
// this network in fp64 lands 4.4e-4 x max|ref| from the reference's fp32 scores (ours in fp32:
// 3.6e-4 at 1 thread, 4.0e-4 at 2), so the README's 5e-4 would leave no room for other CPUs.
constexpr double kDecodedRel = 1e-3;

// Comparisons of one model; remembers the worst max|diff| / max|ref| per tolerance so that the
// margin to each tolerance is printed in the test log (DETRAIN_PARITY_VERBOSE=1: every check).
class Parity {
 public:
  void close(const std::string& name, const torch::Tensor& ours, const torch::Tensor& ref,
             double rel) {
    const auto report = test::check_close(name, ours, ref, rel);
    INFO(report.details);
    CHECK(report.ok);
    if (std::getenv("DETRAIN_PARITY_VERBOSE"))
      std::cout << "  " << name << ": " << report.max_abs_diff / (report.bound / rel) << "\n";
    if (report.bound > 0)
      worst_[rel] = std::max(worst_[rel], report.max_abs_diff / (report.bound / rel));
  }
  void print(const std::string& model) const {
    std::cout << model << " parity, worst max|diff|/max|ref|:";
    for (const auto& [tolerance, ratio] : worst_)
      std::cout << " " << ratio << " (tolerance " << tolerance << ")";
    std::cout << std::endl;
  }

 private:
  std::map<double, double> worst_;
};

struct Golden {
  SafetensorsFile weights, forward;
};

Golden load_golden(const std::string& model) {
  const std::string weights = test::golden(model + "_weights.safetensors");
  const std::string forward = test::golden(model + "_forward.safetensors");
  return Golden{read_safetensors(weights), read_safetensors(forward)};
}

YoloModel build_loaded(const std::string& arch, int64_t nc, const Golden& golden) {
  BuildOptions options;
  options.arch = arch;
  options.scale = "n";
  options.nc = nc;
  YoloModel model(options);
  load_state_dict(*model, golden.weights.tensors, golden.weights.path);
  return model;
}

// Decoded [B, C, A]: boxes, scores, keypoints compared per column group.
void check_decoded(Parity& parity, const std::string& name, const torch::Tensor& ours,
                   const torch::Tensor& ref, int64_t nc) {
  REQUIRE(ours.sizes() == ref.sizes());
  parity.close(name + " boxes", ours.slice(1, 0, 4), ref.slice(1, 0, 4), kDecodedRel);
  parity.close(name + " scores", ours.slice(1, 4, 4 + nc), ref.slice(1, 4, 4 + nc), kDecodedRel);
  if (ours.size(1) > 4 + nc)
    parity.close(name + " keypoints", ours.slice(1, 4 + nc), ref.slice(1, 4 + nc), kDecodedRel);
}

// End-to-end top-k as a set of (anchor, class) per image; matched rows within the decoded
// tolerance. Row order is not compared: near-equal scores may swap places.
void check_topk(Parity& parity, const EvalOutput& ours, const SafetensorsFile& golden) {
  const auto ref_rows = golden.at("eval.output");               // [B, k, 6 (+nk)]
  const auto ref_anchor = golden.at("eval.topk_anchor_index");  // [B, k]
  REQUIRE(ours.detections.sizes() == ref_rows.sizes());
  REQUIRE(ours.topk_anchor_index.sizes() == ref_anchor.sizes());
  for (int64_t b = 0; b < ref_rows.size(0); ++b) {
    std::map<std::pair<int64_t, int64_t>, int64_t> ref_keys, our_keys;  // key -> row
    for (int64_t r = 0; r < ref_rows.size(1); ++r) {
      ref_keys[{ref_anchor[b][r].item<int64_t>(), ref_rows[b][r][5].item<int64_t>()}] = r;
      our_keys[{ours.topk_anchor_index[b][r].item<int64_t>(),
                ours.detections[b][r][5].item<int64_t>()}] = r;
    }
    std::vector<std::pair<int64_t, int64_t>> only_ref, only_ours;
    for (const auto& [key, row] : ref_keys)
      if (!our_keys.count(key)) only_ref.push_back(key);
    for (const auto& [key, row] : our_keys)
      if (!ref_keys.count(key)) only_ours.push_back(key);
    INFO("image " << b << ": " << only_ref.size() << " reference (anchor, class) keys missing, "
                  << only_ours.size() << " extra");
    CHECK(only_ref.empty());
    CHECK(only_ours.empty());
    std::vector<int64_t> ours_index, ref_index;
    for (const auto& [key, row] : ref_keys) {
      auto it = our_keys.find(key);
      if (it == our_keys.end()) continue;
      ref_index.push_back(row);
      ours_index.push_back(it->second);
    }
    const auto pick_ours = ours.detections[b].index_select(0, torch::tensor(ours_index));
    const auto pick_ref = ref_rows[b].index_select(0, torch::tensor(ref_index));
    parity.close("top-k boxes", pick_ours.slice(1, 0, 4), pick_ref.slice(1, 0, 4), kDecodedRel);
    parity.close("top-k scores", pick_ours.slice(1, 4, 5), pick_ref.slice(1, 4, 5), kDecodedRel);
    if (pick_ref.size(1) > 6)
      parity.close("top-k keypoints", pick_ours.slice(1, 6), pick_ref.slice(1, 6), kDecodedRel);
  }
}

void check_branch(Parity& parity, const std::string& prefix, const BranchOutput& ours,
                  const SafetensorsFile& ref) {
  parity.close(prefix + "boxes", ours.boxes, ref.at(prefix + "boxes"), kTrainRel);
  parity.close(prefix + "scores", ours.scores, ref.at(prefix + "scores"), kTrainRel);
  if (ref.contains(prefix + "kpts"))
    parity.close(prefix + "kpts", ours.kpts, ref.at(prefix + "kpts"), kTrainRel);
  if (ref.contains(prefix + "kpts_sigma"))
    parity.close(prefix + "kpts_sigma", ours.kpts_sigma, ref.at(prefix + "kpts_sigma"), kTrainRel);
}

void check_running_stats(Parity& parity, YoloModelImpl& model, const SafetensorsFile& ref) {
  int64_t compared = 0;
  for (const auto& [name, tensor] : state_dict(model)) {
    const std::string key = "after_train_forward." + name;
    if (!ref.contains(key)) continue;
    parity.close(key, tensor, ref.at(key), kRunningStatsRel);
    ++compared;
  }
  // Two stats per BatchNorm; every one the reference stored was compared.
  int64_t stored = 0;
  for (const auto& name : ref.order) stored += name.rfind("after_train_forward.", 0) == 0;
  CHECK(compared == stored);
}

// The reference ran eval (on a copy) first, then one train-mode forward.
void check_forward(Parity& parity, YoloModelImpl& model, const Golden& golden, int64_t nc) {
  const auto& ref = golden.forward;
  const auto input = ref.at("input");  // [2, 3, 128, 128]
  {
    torch::NoGradGuard no_grad;
    model.eval();
    const auto out = model.forward_eval(input, 300);
    if (model.arch().end2end) {
      check_decoded(parity, "eval.decoded_one2one", out.decoded, ref.at("eval.decoded_one2one"),
                    nc);
      check_topk(parity, out, ref);
      // val.nms=true (8.4.190's validation default): the one-to-many branch as cx,cy,w,h for NMS.
      const auto o2m = model.forward_eval(input, 300, /*one2one=*/false);
      CHECK_FALSE(o2m.end2end);
      check_decoded(parity, "eval.one2many_output", o2m.decoded, ref.at("eval.one2many_output"),
                    nc);
    } else {
      check_decoded(parity, "eval.output", out.decoded, ref.at("eval.output"), nc);
    }
  }
  model.train();
  const auto out = model.forward_train(input);
  if (model.arch().end2end) {
    check_branch(parity, "train.one2many.", out.one2many, ref);
    check_branch(parity, "train.one2one.", out.one2one, ref);
  } else {
    check_branch(parity, "train.", out.one2many, ref);
  }
  parity.close("train.feats.1", out.feats[1], ref.at("train.feats.1"), kTrainRel);
  parity.close("train.feats.2", out.feats[2], ref.at("train.feats.2"), kTrainRel);
  check_running_stats(parity, model, ref);
}

// The model's state-dict names and order are the reference's, exactly.
void check_names(YoloModelImpl& model, const Golden& golden) {
  const auto order = nlohmann::json::parse(golden.weights.metadata.at("state_dict_order"))
                         .get<std::vector<std::string>>();
  std::vector<std::string> ours;
  for (const auto& [name, tensor] : state_dict(model)) ours.push_back(name);
  CHECK(ours == order);
  int64_t params = 0;
  for (const auto& p : model.parameters()) params += p.numel();
  CHECK(params == std::stoll(golden.weights.metadata.at("n_params")));
}

// Parameter order is the reference's named_parameters() order (the loss file's gradient list).
void check_param_order(YoloModelImpl& model, const std::string& loss_file) {
  const std::string path = test::golden(loss_file);
  const auto loss = read_safetensors(path);
  const auto names =
      nlohmann::json::parse(loss.metadata.at("grad_param_names")).get<std::vector<std::string>>();
  std::vector<std::string> ours;
  for (const auto& info : model.param_infos()) ours.push_back(info.name);
  CHECK(ours == names);
}

// Everything above for one golden model (`name`_weights / _forward / _loss files).
void check_model(const std::string& name, const std::string& arch, int64_t nc) {
  const Golden golden = load_golden(name);
  auto model = build_loaded(arch, nc, golden);
  check_names(*model, golden);
  check_param_order(*model, name + "_loss.safetensors");
  Parity parity;
  check_forward(parity, *model, golden, nc);
  parity.print(name);
}

}  // namespace

TEST_CASE("yolo26n forward matches the reference", "[parity][model]") {
  check_model("yolo26n", "models/yolo26.yaml", 80);
}

TEST_CASE("yolo26n-pose forward matches the reference", "[parity][model]") {
  check_model("yolo26n-pose", "models/yolo26-pose.yaml", 1);
}

TEST_CASE("yolo11n forward matches the reference", "[parity][model]") {
  check_model("yolo11n", "models/yolo11.yaml", 80);
}

TEST_CASE("yolo11n-pose forward matches the reference", "[parity][model]") {
  check_model("yolo11n-pose", "models/yolo11-pose.yaml", 1);
}

TEST_CASE("yolov8n forward matches the reference", "[parity][model]") {
  check_model("yolov8n", "models/yolov8.yaml", 80);
}

TEST_CASE("yolov8n-pose forward matches the reference", "[parity][model]") {
  check_model("yolov8n-pose", "models/yolov8-pose.yaml", 1);
}
