// [gpu] checks of the CUDA build: yolo26n's training forward and loss on CUDA (fp32 and BF16
// autocast) against the CPU fp32 result, and MuSGD `exact` vs `off` on CUDA after 60 steps.
// Each test skips itself visibly (test::skip) when this build or machine has no CUDA device.
#include <algorithm>
#include <catch2/catch.hpp>
#include <iostream>
#include <memory>
#include <tuple>

#include "compat/torch_compat.h"
#include "loss/criterion.h"
#include "model/tensor_checks.h"
#include "model/yolo_model.h"
#include "optim/optimizer_factory.h"
#include "test_support.h"

using namespace detrain;

namespace {

// cuDNN convolutions may use TF32 (10-bit mantissa, unit roundoff 2^-11 ~ 5e-4) by default in
// LibTorch; a few such roundings per layer over yolo26n's depth stay within 5e-3 of the range.
constexpr double kFp32Rel = 5e-3;
// BF16 autocast rounds every conv/matmul input and output to 8 bits (2^-9 ~ 2e-3 relative);
// compounded over ~60 layers that is a few percent of the output range, so 5e-2 of it.
constexpr double kBf16Rel = 5e-2;

bool cuda_or_skip() {
  if (compat::cuda_available()) return true;
  test::skip("no CUDA device (or a CPU-only LibTorch build): [gpu] test not run");
  return false;
}

model::YoloModel yolo26n() {
  torch::manual_seed(26);
  model::BuildOptions options;
  options.arch = "models/yolo26.yaml";
  options.scale = "n";
  options.nc = 80;
  model::YoloModel net(options);
  net->train();
  return net;
}

torch::Tensor fixed_images() {
  torch::manual_seed(7);
  return torch::rand({2, 3, 256, 256});  // [B, 3, H, W] in [0, 1]
}

// Three boxes over the two images, normalised cx, cy, w, h (hand-picked, mid-sized objects).
loss::Targets fixed_targets(const torch::Device& device) {
  loss::Targets t;
  t.batch_idx = torch::tensor({0, 0, 1}, torch::kLong).to(device);                       // [N]
  t.cls = torch::tensor({0, 5, 17}, torch::kLong).to(device);                            // [N]
  t.boxes_xywhn = torch::tensor({0.3f, 0.4f, 0.2f, 0.3f, 0.7f, 0.6f, 0.25f, 0.2f, 0.5f,  //
                                 0.5f, 0.4f, 0.5f})
                      .view({3, 4})
                      .to(device);  // [N, 4]
  return t;
}

void check_branch(const std::string& name, const model::BranchOutput& ours,
                  const model::BranchOutput& ref, double rel) {
  for (const auto& [part, a, b] : {std::tuple{"boxes", ours.boxes, ref.boxes},
                                   std::tuple{"scores", ours.scores, ref.scores}}) {
    const auto report = test::check_close(
        name + "." + part, a.detach().to(torch::kCPU).to(torch::kFloat), b.detach(), rel);
    INFO(report.details);
    std::cout << "  " << name << "." << part << ": max |cuda - cpu| " << report.max_abs_diff
              << " (bound " << report.bound << ")" << std::endl;
    CHECK(report.ok);
  }
}

struct Run {
  model::TrainOutput out;
  double loss_total = 0;
};

// Forward + loss of `net` on `device`, under BF16 autocast when `bf16`.
Run forward_and_loss(model::YoloModelImpl& net, const torch::Device& device, bool bf16) {
  const auto images = fixed_images().to(device);  // [2, 3, 256, 256]
  Run run;
  {
    compat::AutocastGuard autocast(device.type(), torch::kBFloat16, bf16);
    run.out = net.forward_train(images);
  }
  auto criterion =
      loss::make_criterion(net.head()->options(), config::LossOptions{}, {}, net.head()->flow());
  criterion->set_epoch(0, 100);
  run.loss_total = (*criterion)(run.out, fixed_targets(device), {256, 256}).total.item<double>();
  return run;
}

// max |param_exact - param_off| of yolo26n after `steps` MuSGD steps on CUDA with one fixed
// random gradient: two identically seeded models, one optimizer each, stepped side by side.
double cuda_exact_vs_off(const std::string& ns_dtype, int steps) {
  const torch::Device cuda(torch::kCUDA, 0);
  std::vector<std::vector<model::ParamInfo>> sides;
  std::vector<std::unique_ptr<optim::Optimizer>> optimizers;
  std::vector<model::YoloModel> nets;
  for (const char* mode : {"off", "exact"}) {
    nets.push_back(yolo26n());
    nets.back()->to(cuda);
    sides.push_back(nets.back()->param_infos());
    config::OptimOptions options;
    options.optimizer = "musgd";
    options.bucketing = mode;
    options.ns_dtype = ns_dtype;
    optimizers.push_back(optim::build_optimizer(sides.back(), options, {}));
  }
  torch::manual_seed(11);
  std::vector<torch::Tensor> grads;
  for (const auto& info : sides[0])
    grads.push_back((torch::randn(info.param.sizes()) * 0.01).to(cuda));  // [...] as the param
  for (int s = 0; s < steps; ++s) {
    torch::NoGradGuard no_grad;
    for (auto& side : sides)  // fresh copies: an optimizer may change its gradients in place
      for (size_t i = 0; i < side.size(); ++i) side[i].param.mutable_grad() = grads[i].clone();
    for (auto& opt : optimizers) opt->step();
  }
  double worst = 0;
  for (size_t i = 0; i < sides[0].size(); ++i)
    worst = std::max(worst, (sides[0][i].param - sides[1][i].param).abs().max().item<double>());
  return worst;
}

}  // namespace

TEST_CASE("yolo26n forward and loss on CUDA match the CPU in fp32 and BF16", "[gpu][cuda]") {
  if (!cuda_or_skip()) return;
  auto net = yolo26n();
  const auto cpu = forward_and_loss(*net, torch::Device(torch::kCPU), false);
  net->to(torch::Device(torch::kCUDA, 0));
  const torch::Device cuda(torch::kCUDA, 0);

  const auto fp32 = forward_and_loss(*net, cuda, false);
  check_branch("fp32 one2many", fp32.out.one2many, cpu.out.one2many, kFp32Rel);
  check_branch("fp32 one2one", fp32.out.one2one, cpu.out.one2one, kFp32Rel);
  std::cout << "  loss: cpu " << cpu.loss_total << ", cuda fp32 " << fp32.loss_total << std::endl;
  CHECK(std::abs(fp32.loss_total - cpu.loss_total) <= kFp32Rel * std::abs(cpu.loss_total));

  const auto bf16 = forward_and_loss(*net, cuda, true);
  CHECK(bf16.out.one2many.scores.scalar_type() == torch::kBFloat16);  // autocast really on
  check_branch("bf16 one2many", bf16.out.one2many, cpu.out.one2many, kBf16Rel);
  check_branch("bf16 one2one", bf16.out.one2one, cpu.out.one2one, kBf16Rel);
  std::cout << "  loss: cuda bf16 " << bf16.loss_total << std::endl;
  CHECK(std::abs(bf16.loss_total - cpu.loss_total) <= kBf16Rel * std::abs(cpu.loss_total));
}

TEST_CASE("MuSGD exact stays with off on CUDA after 60 steps", "[gpu][cuda][musgd]") {
  if (!cuda_or_skip()) return;
  const double fp32 = cuda_exact_vs_off("fp32", 60);
  const double bf16 = cuda_exact_vs_off("bf16", 60);
  std::cout << "yolo26n on CUDA, 60 steps: max |dparam| exact vs off: fp32 Newton-Schulz " << fp32
            << ", bf16 " << bf16 << std::endl;
  // fp32: the CPU test's bar (1e-5 after 35 steps, tests/optim/test_musgd.cpp) scaled by 60/35
  // and rounded up; batched and single matmuls round in different orders.
  CHECK(fp32 <= 2e-5);
  // bf16: the CPU test's sanity bound (5e-3 after 35 steps) scaled the same way.
  CHECK(bf16 <= 1e-2);
}
