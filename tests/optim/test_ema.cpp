// Model EMA: decay ramp, the blend of parameters and BatchNorm statistics against the formula
// evaluated in double, integer buffers copied, strict state round trip.
#include <catch2/catch.hpp>
#include <cmath>

#include "common/errors.h"
#include "optim/ema.h"

using namespace detrain;
using namespace detrain::optim;

namespace {

struct TinyNetImpl : torch::nn::Module {
  TinyNetImpl(int64_t width = 4) {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, width, 3)));
    bn = register_module("bn", torch::nn::BatchNorm2d(width));
    fc = register_module("fc", torch::nn::Linear(width, 2));
  }
  torch::Tensor forward(const torch::Tensor& x) {  // x [B, 3, H, W] -> [B, 2]
    return fc(bn(conv(x)).mean({2, 3}));
  }
  torch::nn::Conv2d conv{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(TinyNet);

torch::Tensor find(const NamedTensors& state, const std::string& name) {
  for (const auto& [n, t] : state)
    if (n == name) return t;
  FAIL("no entry " << name);
  return {};
}

}  // namespace

TEST_CASE("EMA decay ramps as decay times 1 - exp(-u/tau)", "[unit][optim]") {
  torch::manual_seed(0);
  TinyNet model, copy;
  ModelEma ema(copy.ptr(), *model, {0.9999, 2000.0});
  CHECK(ema.decay_at(0) == 0.0);
  // 0.9999 * (1 - exp(-1/2000)) = 0.9999 * 4.998750208307e-4 = 4.99825033...e-4
  // Relative 1e-15: the same expression, evaluated once more (a few double roundings).
  CHECK(ema.decay_at(1) == Approx(0.9999 * (1.0 - std::exp(-0.0005))).epsilon(1e-15));
  // Relative 1e-10: the hand value is written with 13 significant digits.
  CHECK(ema.decay_at(1) == Approx(4.998250332806e-4).epsilon(1e-10));
  // u = 2000: 0.9999 * (1 - 1/e); relative 1e-14: exp() rounding and 16 written digits.
  CHECK(ema.decay_at(2000) == Approx(0.9999 * 0.6321205588285577).epsilon(1e-14));
  CHECK(ema.updates() == 0);
}

TEST_CASE("EMA options come from the train section", "[unit][optim]") {
  config::TrainOptions train;
  train.ema_decay = 0.999;
  train.ema_tau = 500;
  const EmaOptions o = ema_options(train);
  CHECK(o.decay == 0.999);
  CHECK(o.tau == 500);
}

TEST_CASE("EMA starts as an fp32 copy in eval mode without gradients", "[unit][optim]") {
  torch::manual_seed(1);
  TinyNet model, copy;
  ModelEma ema(copy.ptr(), *model);
  CHECK_FALSE(copy->is_training());
  for (const auto& p : copy->parameters()) CHECK_FALSE(p.requires_grad());
  CHECK(torch::equal(copy->conv->weight, model->conv->weight));
  // The copy is independent: changing the model does not move the EMA.
  torch::NoGradGuard no_grad;
  model->conv->weight.add_(1.0);
  CHECK_FALSE(torch::equal(copy->conv->weight, model->conv->weight));
}

TEST_CASE("EMA update blends weights and BN statistics and copies integer buffers",
          "[unit][optim]") {
  torch::manual_seed(2);
  TinyNet model, copy;
  ModelEma ema(copy.ptr(), *model, {0.9999, 3.0});  // short tau so d is far from 0 and 1
  const NamedTensors before = ema.state();
  std::map<std::string, torch::Tensor> start;
  for (const auto& [name, t] : before) start[name] = t.clone();

  // Change the model: a training forward moves the BN running stats and num_batches_tracked,
  // and a manual step moves the weights.
  model->train();
  model->forward(torch::randn({2, 3, 6, 6}));
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.add_(torch::randn_like(p));
  }
  ema.update();
  CHECK(ema.updates() == 1);
  const double d = 0.9999 * (1.0 - std::exp(-1.0 / 3.0));  // 0.28343...

  for (const auto& [name, e] : ema.state()) {
    torch::Tensor m;
    for (const auto& item : model->named_parameters())
      if (item.key() == name) m = item.value();
    for (const auto& item : model->named_buffers())
      if (item.key() == name) m = item.value();
    REQUIRE(m.defined());
    if (!m.is_floating_point()) {
      CHECK(torch::equal(e, m));  // num_batches_tracked: copied (1)
      continue;
    }
    const auto expected =
        start[name].to(torch::kDouble) * d + m.detach().to(torch::kDouble) * (1.0 - d);
    // fp32 blend against the double formula: three fp32 roundings of values of order 1.
    CHECK(torch::allclose(e.to(torch::kDouble), expected, 0, 1e-6));
    CHECK(e.scalar_type() == torch::kFloat);
  }
  CHECK(find(ema.state(), "bn.num_batches_tracked").item<int64_t>() == 1);
  // BN statistics really moved (they are part of the average).
  CHECK_FALSE(torch::equal(find(ema.state(), "bn.running_mean"), start["bn.running_mean"]));
}

TEST_CASE("EMA fast path and the generic foreach path agree", "[unit][optim]") {
  torch::manual_seed(3);
  // A float64 twin of the model (same values) sends the second EMA down the generic path.
  TinyNet model, twin, copy_a, copy_b;
  for (auto& t : twin->parameters()) t.set_data(t.to(torch::kDouble));
  for (auto& t : twin->buffers())
    if (t.is_floating_point()) t.set_data(t.to(torch::kDouble));
  auto sync_twin = [&] {
    torch::NoGradGuard no_grad;
    auto src = model->named_parameters();
    for (auto& item : twin->named_parameters()) item.value().copy_(src[item.key()]);
  };
  sync_twin();
  ModelEma fast(copy_a.ptr(), *model, {0.9999, 5.0});
  ModelEma generic(copy_b.ptr(), *twin, {0.9999, 5.0});
  for (int step = 0; step < 3; ++step) {
    {
      torch::NoGradGuard no_grad;
      for (auto& p : model->parameters()) p.mul_(0.9).add_(torch::randn_like(p) * 0.1);
    }
    sync_twin();
    fast.update();
    generic.update();
  }
  const auto a = fast.state(), b = generic.state();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].first == b[i].first);
    CHECK(b[i].second.scalar_type() == a[i].second.scalar_type());
    // The foreach add may fuse multiply and add (one rounding fewer): a few fp32 ulps of O(1).
    CHECK(torch::allclose(a[i].second.to(torch::kDouble), b[i].second.to(torch::kDouble), 0, 1e-6));
  }
}

TEST_CASE("EMA state round trip and strict loading", "[unit][optim]") {
  torch::manual_seed(4);
  TinyNet model, copy;
  ModelEma ema(copy.ptr(), *model, {0.9999, 2.0});
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.add_(1.0);
  }
  ema.update();
  ema.update();
  NamedTensors saved;
  for (const auto& [name, t] : ema.state()) saved.emplace_back(name, t.clone());

  TinyNet model2, copy2;
  ModelEma restored(copy2.ptr(), *model2, {0.9999, 2.0});
  restored.load_state(saved, ema.updates(), "test");
  CHECK(restored.updates() == 2);
  for (size_t i = 0; i < saved.size(); ++i)
    CHECK(torch::equal(restored.state()[i].second, saved[i].second));

  NamedTensors missing(saved.begin() + 1, saved.end());
  CHECK_THROWS_AS(restored.load_state(missing, 1, "ckpt"), ModelError);
  NamedTensors reshaped = saved;
  reshaped[0].second = torch::zeros({1});
  CHECK_THROWS_WITH(restored.load_state(reshaped, 1, "ckpt"),
                    Catch::Contains("ckpt: EMA state does not fit this model"));
}

TEST_CASE("EMA refuses a model of another shape", "[unit][optim]") {
  TinyNet model(4), other(8);
  CHECK_THROWS_AS(ModelEma(other.ptr(), *model), ModelError);
}
