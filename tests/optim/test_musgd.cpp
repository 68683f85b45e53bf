// MuSGD behaviour: single-matrix keys take the direct call, `exact` stays with `off` on yolo26n's
// real shapes, vector and w_muon == 0 paths are torch::optim::SGD bit for bit, warmup's lr and
// momentum reach both branches, and the state round trip continues a run bit-exactly.
#include <algorithm>
#include <catch2/catch.hpp>
#include <iostream>
#include <sstream>

#include "model/tensor_checks.h"
#include "model/yolo_model.h"
#include "optim/adamw.h"
#include "optim/musgd.h"
#include "optim/optimizer_factory.h"
#include "yolo26n_params.h"

using namespace detrain;
using namespace detrain::optim;

namespace {

std::vector<torch::Tensor> random_params(const std::vector<std::vector<int64_t>>& shapes,
                                         uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<torch::Tensor> out;
  for (const auto& s : shapes) out.push_back(torch::randn(s).requires_grad_());
  return out;
}

std::vector<torch::Tensor> clones(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  for (const auto& p : params) out.push_back(p.detach().clone().requires_grad_());
  return out;
}

std::vector<std::string> names_for(size_t n, const std::string& prefix) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

// Gives every parameter the gradient grads[step][i] (a copy, so optimizers cannot share it).
void set_grads(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& grads) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) {
    auto& g = params[i].mutable_grad();
    if (g.defined())
      g.copy_(grads[i]);
    else
      g = grads[i].clone();
  }
}

std::vector<std::vector<torch::Tensor>> fixed_grads(const std::vector<torch::Tensor>& params,
                                                    int steps, uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<std::vector<torch::Tensor>> out(steps);
  for (auto& step : out)
    for (const auto& p : params) step.push_back(torch::randn(p.sizes()) * 0.01);
  return out;
}

// Largest |a - b| over parameter lists, with the worst tensor's index.
std::pair<double, size_t> max_diff(const std::vector<torch::Tensor>& a,
                                   const std::vector<torch::Tensor>& b) {
  std::pair<double, size_t> worst{0.0, 0};
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = (a[i] - b[i]).abs().max().item<double>();
    if (d > worst.first) worst = {d, i};
  }
  return worst;
}

void require_identical(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b,
                       const std::string& what) {
  const auto [diff, index] = max_diff(a, b);
  INFO(what << ": max |diff| " << diff << " at parameter " << index << " of shape "
            << a[index].sizes());
  for (size_t i = 0; i < a.size(); ++i) REQUIRE(torch::equal(a[i], b[i]));
}

MuSGDOptions muon_options(double momentum = 0.937, bool nesterov = true) {
  MuSGDOptions o;
  o.lr = 0.01;
  o.momentum = momentum;
  o.weight_decay = 5e-4;
  o.nesterov = nesterov;
  o.w_muon = 0.2;
  o.w_sgd = 1.0;
  return o;
}

MuSGD make_musgd(const std::vector<torch::Tensor>& params, MuSGDOptions o, Bucketing bucketing,
                 torch::ScalarType ns = torch::kBFloat16, NsKernel kernel = NsKernel::kAuto) {
  MuSGDSettings settings;
  settings.bucketing = bucketing;
  settings.ns_dtype = ns;
  settings.ns_kernel = kernel;
  return MuSGD({{"g", o, names_for(params.size(), "p"), params}}, settings);
}

// max |param_exact - param_off| after `steps` steps of the factory's MuSGD on yolo26n's
// parameters, keeping matrices whose (rows, rest) view has min(rows, rest) <= max_rank.
double exact_vs_off(const std::string& ns_dtype, int steps, int64_t max_rank = 1 << 30) {
  auto infos = test::yolo26n_params();
  infos.erase(std::remove_if(infos.begin(), infos.end(),
                             [&](const model::ParamInfo& i) {
                               const auto& p = i.param;
                               return p.dim() >= 2 &&
                                      std::min(p.size(0), p.numel() / p.size(0)) > max_rank;
                             }),
              infos.end());
  std::vector<torch::Tensor> initial;
  for (const auto& i : infos) initial.push_back(i.param.detach().clone());
  const auto grads = fixed_grads(initial, 1, 11)[0];
  std::vector<std::vector<torch::Tensor>> finals;
  for (const char* mode : {"off", "exact"}) {
    {
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < infos.size(); ++i) {
        infos[i].param.copy_(initial[i]);
        infos[i].param.mutable_grad() = torch::Tensor();
      }
    }
    config::OptimOptions options;
    options.optimizer = "musgd";
    options.bucketing = mode;
    options.ns_dtype = ns_dtype;
    auto opt = build_optimizer(infos, options, {});
    std::vector<torch::Tensor> params;
    for (const auto& i : infos) params.push_back(i.param);
    for (int s = 0; s < steps; ++s) {
      set_grads(params, grads);
      opt->step();
    }
    finals.emplace_back();
    for (const auto& p : params) finals.back().push_back(p.detach().clone());
  }
  return max_diff(finals[0], finals[1]).first;
}

}  // namespace

TEST_CASE("A key with one matrix takes the direct call: exact equals off bit for bit",
          "[unit][musgd]") {
  // Every shape once, so `exact` builds no stack; plus a vector.
  const std::vector<std::vector<int64_t>> shapes{
      {16, 3, 3, 3}, {64, 2}, {2, 64}, {32, 16, 1, 1}, {8}};
  for (const auto kernel : {NsKernel::kEmulated, NsKernel::kNative}) {
    INFO(ns_kernel_name(kernel) << " kernel");
    const auto off_params = random_params(shapes, 1);
    const auto exact_params = clones(off_params);
    auto off = make_musgd(off_params, muon_options(), Bucketing::kOff, torch::kBFloat16, kernel);
    auto exact =
        make_musgd(exact_params, muon_options(), Bucketing::kExact, torch::kBFloat16, kernel);
    CHECK(exact.stacked_buckets() == 0);
    CHECK(exact.matrix_keys().size() == 4);
    CHECK(exact.cpu_ns_kernel() == kernel);
    const auto grads = fixed_grads(off_params, 4, 2);
    for (const auto& g : grads) {
      set_grads(off_params, g);
      set_grads(exact_params, g);
      off.step();
      exact.step();
    }
    require_identical(off_params, exact_params, "exact vs off");
  }
}

TEST_CASE("exact stays with off on yolo26n's smaller shapes (fp32 Newton-Schulz, 35 steps)",
          "[unit][musgd]") {
  // The keys whose Newton-Schulz works on at most 64 rows (keeps the test to seconds); the
  // [slow] case below runs every shape.
  const double diff = exact_vs_off("fp32", 35, 64);
  std::cout << "yolo26n (min(rows, cols) <= 64) exact vs off, fp32 Newton-Schulz, 35 steps: "
            << "max |dparam| = " << diff << std::endl;
  // Same bound as the full case: only fp32 reduction order differs.
  CHECK(diff <= 1e-5);
}

TEST_CASE("exact stays with off on yolo26n's shapes (fp32 Newton-Schulz, 35 steps)",
          "[slow][musgd]") {
  const double diff = exact_vs_off("fp32", 35);
  std::cout << "yolo26n exact vs off, fp32 Newton-Schulz, 35 steps: max |dparam| = " << diff
            << std::endl;
  // The bar: both orders of the same fp32 arithmetic agree to 1e-5 after 35 steps.
  CHECK(diff <= 1e-5);
}

TEST_CASE("exact vs off on yolo26n's shapes with bf16 Newton-Schulz (reported)", "[slow][musgd]") {
  const double diff = exact_vs_off("bf16", 35);
  std::cout << "yolo26n exact vs off, bf16 Newton-Schulz, 35 steps: max |dparam| = " << diff
            << std::endl;
  // bf16 rounds the orthogonalised update to 2^-8 relative; 35 steps of lr 0.01 x 0.2 x that
  // per element bound the drift far below the parameters' scale (a sanity bound, not parity).
  CHECK(diff <= 5e-3);
}

TEST_CASE("Vectors and w_muon == 0 groups step exactly like torch::optim::SGD", "[unit][musgd]") {
  const std::vector<std::vector<int64_t>> matrices{{16, 8, 3, 3}, {16, 8, 3, 3}, {64, 2}};
  const std::vector<std::vector<int64_t>> vectors{{16}, {64}, {7}};
  for (const bool nesterov : {true, false}) {
    for (const double wd : {0.0, 5e-4}) {
      DYNAMIC_SECTION("nesterov " << nesterov << " weight decay " << wd) {
        // Group "sgd": matrices with w_muon == 0; group "muon": vectors only (w_muon > 0).
        const auto mats = random_params(matrices, 5), vecs = random_params(vectors, 6);
        const auto torch_mats = clones(mats), torch_vecs = clones(vecs);
        MuSGDOptions plain = muon_options(0.9, nesterov);
        plain.weight_decay = wd;
        plain.w_muon = 0.0;
        MuSGDOptions muon = plain;
        muon.w_muon = 0.2;
        muon.lr = 0.03;
        MuSGD ours(
            {{"sgd", plain, names_for(3, "m"), mats}, {"muon", muon, names_for(3, "v"), vecs}}, {});
        CHECK(ours.muon_matrices() == 0);
        auto sgd_options = [&](double lr) {
          return torch::optim::SGDOptions(lr).momentum(0.9).weight_decay(wd).nesterov(nesterov);
        };
        torch::optim::SGD reference_mats(torch_mats, sgd_options(0.01));
        torch::optim::SGD reference_vecs(torch_vecs, sgd_options(0.03));
        const auto gm = fixed_grads(mats, 5, 7), gv = fixed_grads(vecs, 5, 8);
        for (int s = 0; s < 5; ++s) {
          set_grads(mats, gm[s]);
          set_grads(vecs, gv[s]);
          set_grads(torch_mats, gm[s]);
          set_grads(torch_vecs, gv[s]);
          ours.step();
          reference_mats.step();
          reference_vecs.step();
        }
        require_identical(mats, torch_mats, "w_muon == 0 matrices vs torch::optim::SGD");
        require_identical(vecs, torch_vecs, "vectors vs torch::optim::SGD");
      }
    }
  }
}

TEST_CASE("Warmup's lr and momentum changes reach both branches", "[unit][musgd]") {
  // Two equal matrices (a stack under exact), one single, one vector.
  const std::vector<std::vector<int64_t>> shapes{{16, 8, 3, 3}, {16, 8, 3, 3}, {32, 16}, {16}};
  const auto grads = fixed_grads(random_params(shapes, 9), 4, 10);
  const std::vector<std::pair<double, double>> schedule{
      {0.0, 0.8}, {0.004, 0.85}, {0.007, 0.9}, {0.01, 0.937}};  // (lr, momentum)
  for (const auto mode : {Bucketing::kOff, Bucketing::kExact}) {
    const auto params = random_params(shapes, 9);
    auto opt = make_musgd(params, muon_options(), mode, torch::kFloat);
    // The formulas of DESIGN.md (MuSGD) written out per parameter with the same schedule.
    const auto expected = clones(params);
    std::vector<torch::Tensor> muon_m, sgd_b;
    for (const auto& p : expected) {
      muon_m.push_back(torch::zeros_like(p));
      sgd_b.push_back(torch::Tensor());
    }
    for (size_t s = 0; s < schedule.size(); ++s) {
      const auto [lr, beta] = schedule[s];
      opt.set_lr(0, lr);
      opt.set_momentum(0, beta);
      REQUIRE(opt.lr(0) == lr);
      REQUIRE(opt.momentum(0) == beta);
      set_grads(params, grads[s]);
      opt.step();
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < expected.size(); ++i) {
        auto p = expected[i];
        const auto& g = grads[s][i];
        if (p.dim() >= 2) {
          const auto u = muon_update(g, muon_m[i], beta, true, torch::kFloat);
          p.add_(u.reshape(p.sizes()), -(lr * 0.2));
          if (!sgd_b[i].defined()) sgd_b[i] = torch::zeros_like(p);
        }
        const auto gd = g.add(p, 5e-4);
        if (!sgd_b[i].defined())
          sgd_b[i] = gd.clone();
        else
          sgd_b[i].mul_(beta).add_(gd);
        p.add_(gd.add(sgd_b[i], beta), -lr);  // w_sgd 1 for matrices; -lr for vectors
      }
    }
    const auto [diff, index] = max_diff(params, expected);
    INFO((mode == Bucketing::kOff ? "off" : "exact")
         << ": max |ours - formula| " << diff << " at parameter " << index);
    // off performs the formula's operations in the same order: identical. exact runs them on a
    // stack (other vector/tail split, batched matmuls): fp32 rounding only.
    CHECK(diff <= (mode == Bucketing::kOff ? 0.0 : 1e-6));
  }
}

TEST_CASE("lr 0 freezes both branches while momentum buffers still fill", "[unit][musgd]") {
  const std::vector<std::vector<int64_t>> shapes{{16, 8, 3, 3}, {16, 8, 3, 3}, {16}};
  const auto params = random_params(shapes, 12);
  const auto before = clones(params);
  auto opt = make_musgd(params, muon_options(), Bucketing::kExact);
  opt.set_lr(0, 0.0);
  set_grads(params, fixed_grads(params, 1, 13)[0]);
  opt.step();
  require_identical(params, before, "after a step at lr 0");
  const auto snap = opt.snapshot();
  double buffer_sum = 0;
  for (const auto& [name, t] : snap.tensors) buffer_sum += t.abs().sum().item<double>();
  CHECK(buffer_sum > 0);
}

TEST_CASE("State round trip continues the trajectory bit-exactly", "[unit][musgd]") {
  const std::vector<std::vector<int64_t>> shapes{{16, 8, 3, 3}, {16, 8, 3, 3}, {64, 2}, {16}, {5}};
  const auto grads = fixed_grads(random_params(shapes, 20), 6, 21);
  struct Case {
    std::string name;
    std::function<std::unique_ptr<Optimizer>(const std::vector<torch::Tensor>&)> make;
  };
  const std::vector<Case> cases{
      {"musgd exact",
       [](const std::vector<torch::Tensor>& p) {
         return std::make_unique<MuSGD>(make_musgd(p, muon_options(), Bucketing::kExact));
       }},
      {"musgd off",
       [](const std::vector<torch::Tensor>& p) {
         return std::make_unique<MuSGD>(make_musgd(p, muon_options(), Bucketing::kOff));
       }},
      {"adamw", [](const std::vector<torch::Tensor>& p) {
         AdamWOptions o;
         o.lr = 0.001;
         o.weight_decay = 5e-4;
         return std::make_unique<AdamW>(
             std::vector<AdamWGroup>{{"g", o, names_for(p.size(), "p"), p}});
       }}};
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.name) {
      const auto straight = random_params(shapes, 22);
      auto a = c.make(straight);
      for (int s = 0; s < 3; ++s) {
        set_grads(straight, grads[s]);
        a->set_lr(0, 0.01 - 0.001 * s);  // a warmup-like change that must survive the trip
        a->set_momentum(0, 0.9 + 0.01 * s);
        a->step();
      }
      std::stringstream buffer;
      {
        torch::serialize::OutputArchive archive;
        a->save(archive);
        archive.save_to(buffer);
      }
      const auto resumed = clones(straight);
      auto b = c.make(resumed);
      {
        torch::serialize::InputArchive archive;
        archive.load_from(buffer);
        b->load(archive);
      }
      CHECK(b->lr(0) == a->lr(0));
      CHECK(b->momentum(0) == a->momentum(0));
      for (int s = 3; s < 6; ++s) {
        set_grads(straight, grads[s]);
        set_grads(resumed, grads[s]);
        a->step();
        b->step();
      }
      require_identical(straight, resumed, c.name + " straight vs resumed");
    }
  }
}

TEST_CASE("Loading state from another optimizer kind is refused", "[unit][musgd]") {
  const auto params = random_params({{4, 4}}, 30);
  auto musgd = make_musgd(params, muon_options(), Bucketing::kExact);
  auto snap = musgd.snapshot();
  snap.kind = "adamw";
  CHECK_THROWS_WITH(musgd.restore(snap), Catch::Contains("optimizer the run started with"));
}
