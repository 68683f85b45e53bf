// Newton-Schulz and the per-parameter Muon update: singular values land in the quintic's band,
// the stacked call equals per-matrix calls, and the golden cases of the reference
// (musgd_yolo26n.safetensors: ns.*, mu.*) are reproduced within the golden README's section 7.
#include <ATen/Parallel.h>

#include <catch2/catch.hpp>
#include <iostream>
#include <sstream>

#include "model/safetensors.h"
#include "model/tensor_checks.h"
#include "optim/musgd.h"
#include "optim/newton_schulz.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::optim;

namespace {

double rel_error(const torch::Tensor& ours, const torch::Tensor& ref) {
  return ((ours.to(torch::kDouble) - ref.to(torch::kDouble)).norm() / ref.to(torch::kDouble).norm())
      .item<double>();
}

// NS cases vs Ultralytics 8.4.190 (torch 2.11 CPU): ||diff|| / ||ref|| <= 1e-2. Measured on an
// AMD EPYC: 0 for (16,27), (80,9), (64,2), 1e-8 for (64,48), 3.3e-3 for (32,288) (its bf16 gemm
// sums long rows in another order than one fp32 product; the flipped bf16 roundings carry).
constexpr double kNsVsReference = 1e-2;
// vs variant_f32acc (the same rounding points with one fp32 product per matmul, ours): <= 2e-2.
constexpr double kNsVsVariant = 2e-2;

// The five steps as plain fp32 tensor arithmetic with every bf16 rounding spelled out where
// Ultralytics 8.4.190's ops round: A = X X^T once, then each baddbmm line (b A + c A A and
// a X + B X) once, with fp32 coefficients (torch 2.x keeps a Python scalar in fp32 for a bf16
// tensor). The kernel must give the same bits. `x` [r, c] is normalised and wide.
torch::Tensor aten_steps(torch::Tensor x) {
  const bool bf16 = x.scalar_type() == torch::kBFloat16;
  const auto r = [&](const torch::Tensor& t) {
    return bf16 ? t.to(torch::kBFloat16).to(torch::kFloat) : t;
  };
  const float ka = static_cast<float>(kNsA), kb = static_cast<float>(kNsB),
              kc = static_cast<float>(kNsC);
  auto xf = x.to(torch::kFloat);
  for (int step = 0; step < kNsSteps; ++step) {
    const auto a = r(xf.mm(xf.t()));
    const auto b = r(kb * a + kc * a.mm(a));
    xf = r(ka * xf + b.mm(xf));
  }
  return xf.to(x.scalar_type());
}

torch::Tensor aten_newton_schulz(const torch::Tensor& matrix, torch::ScalarType compute) {
  auto x = matrix.to(compute);
  x = x / (x.norm() + kNsEps);
  const bool tall = matrix.size(0) > matrix.size(1);
  // A contiguous copy of the wide orientation, as the kernel's workspace holds it: LibTorch
  // 2.x's BLAS sums a transposed view's products in another order (1 ulp in fp32).
  x = aten_steps(tall ? x.t().contiguous() : x);
  return tall ? x.t() : x;
}

// Max |a - b| with the worst element's index and values, for a failure message.
std::string worst_difference(const torch::Tensor& a, const torch::Tensor& b) {
  const auto d = (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().flatten();
  const int64_t i = d.argmax().item<int64_t>();
  std::ostringstream out;
  out << "max |diff| " << d[i].item<double>() << " at flat index " << i << ": "
      << a.flatten()[i].item<double>() << " vs " << b.flatten()[i].item<double>();
  return out.str();
}

}  // namespace

TEST_CASE("Newton-Schulz singular values lie in the quintic's band", "[unit][musgd]") {
  torch::manual_seed(3);
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    for (const auto& shape : std::vector<std::vector<int64_t>>{{64, 576}, {96, 40}, {32, 32}}) {
      const auto g = torch::randn(shape);  // [r, c]
      const auto out = newton_schulz(g, dtype);
      REQUIRE(out.sizes() == g.sizes());
      CHECK(out.scalar_type() == dtype);
      const auto sv = torch::linalg_svdvals(out.to(torch::kFloat));  // [min(r, c)]
      INFO("dtype " << dtype << " shape " << g.sizes() << " singular values "
                    << sv.min().item<double>() << ".." << sv.max().item<double>());
      // The quintic's fixed coefficients map every singular value into about [0.5, 1.5]
      // rather than to 1 (reference-yolo.md 2.1 / the reference's docstring).
      CHECK(sv.min().item<double>() > 0.5);
      CHECK(sv.max().item<double>() < 1.5);
    }
  }
}

TEST_CASE("Stacked Newton-Schulz equals the per-matrix call", "[unit][musgd]") {
  torch::manual_seed(4);
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    for (const auto& shape :
         std::vector<std::vector<int64_t>>{{5, 16, 27}, {3, 64, 48}, {4, 8, 8}}) {
      const auto stack = torch::randn(shape);  // [k, r, c]
      const auto batched = newton_schulz_batched(stack, dtype);
      REQUIRE(batched.sizes() == stack.sizes());
      double worst = 0;
      for (int64_t i = 0; i < stack.size(0); ++i) {
        const auto single = newton_schulz(stack[i], dtype);
        worst = std::max(
            worst,
            (batched[i].to(torch::kFloat) - single.to(torch::kFloat)).abs().max().item<double>());
      }
      INFO("dtype " << dtype << " stack " << stack.sizes() << " max |batched - single| " << worst);
      // fp32: batched matmuls run the same gemm per slice and the per-matrix norm reduces the
      // same elements, so only reduction order can differ (a few ulp of values <= ~1.5).
      // bf16: one bf16 ulp at 1 is 2^-7; batched kernels may round the norm or a product once
      // differently, which the iteration carries to about one ulp of the output.
      CHECK(worst <= (dtype == torch::kFloat ? 1e-5 : 1.6e-2));
    }
  }
}

TEST_CASE("Newton-Schulz reproduces the reference cases", "[parity][musgd]") {
  const std::string path = test::golden("musgd_yolo26n.safetensors");
  const auto golden = model::read_safetensors(path);
  for (const char* c : {"a", "b", "c", "d", "e"}) {
    const std::string key = std::string("ns.") + c;
    const auto input = golden.at(key + ".input");  // [r, c]
    const auto ours = newton_schulz(input, torch::kBFloat16);
    const double vs_ref = rel_error(ours, golden.at(key + ".output"));
    const double vs_variant = rel_error(ours, golden.at("variant_f32acc." + key + ".output"));
    std::cout << key << " " << input.sizes() << ": ||ours - ref|| / ||ref|| = " << vs_ref
              << ", vs variant_f32acc " << vs_variant << "\n";
    CHECK(vs_ref <= kNsVsReference);
    CHECK(vs_variant <= kNsVsVariant);
  }
}

TEST_CASE("muon_update reproduces the reference cases", "[parity][musgd]") {
  const std::string path = test::golden("musgd_yolo26n.safetensors");
  const auto golden = model::read_safetensors(path);
  for (const char* c : {"a", "b", "c"}) {
    const std::string key = std::string("mu.") + c;
    const auto grad = golden.at(key + ".grad");
    auto momentum = golden.at(key + ".momentum_in").clone();
    // The golden README section 5: beta 0.937, nesterov True.
    const auto update = muon_update(grad, momentum, 0.937, true, torch::kBFloat16);
    const auto ref = golden.at(key + ".update");
    REQUIRE(update.numel() == ref.numel());
    // The buffer is m * 0.937 then + 0.063 * g in fp32 (8.4.190's foreach ops): bit for bit
    // those ops on this machine's kernel path...
    const auto momentum_in = golden.at(key + ".momentum_in");
    CHECK(torch::equal(momentum,
                       momentum_in.mul(0.937).add_(grad.reshape(momentum_in.sizes()), 1 - 0.937)));
    // ...and within one fp32 ulp (2^-23 of the buffer's largest magnitude) of the golden's:
    // ATen's kernel paths (ATEN_CPU_CAPABILITY default / avx2 / avx512) may fuse the add's
    // multiply (FMA) or not (the golden's: the generating machine's path).
    const auto buffer =
        test::check_close(key + " momentum", momentum, golden.at(key + ".momentum_out"), 0x1p-23);
    INFO(buffer.details);
    CHECK(buffer.ok);
    const double vs_ref = rel_error(update.reshape(ref.sizes()), ref);
    std::cout << key << " " << grad.sizes() << ": ||update - ref|| / ||ref|| = " << vs_ref << "\n";
    CHECK(vs_ref <= kNsVsReference);
  }
}

TEST_CASE("The CPU kernel gives the ATen formula's bits", "[unit][musgd]") {
  torch::manual_seed(5);
  // Wide, tall, square and the tiny shapes of yolo26n ([4, 16], [9, 80]); bf16 and fp32.
  const std::vector<std::vector<int64_t>> shapes{{16, 27}, {96, 40},  {32, 32}, {4, 16},
                                                 {80, 9},  {64, 576}, {2, 64}};
  for (const auto dtype : {torch::kBFloat16, torch::kFloat}) {
    for (const auto& shape : shapes) {
      const auto g = torch::randn(shape);  // [r, c]
      const auto ours = newton_schulz(g, dtype);
      const auto ref = aten_newton_schulz(g, dtype);
      INFO("dtype " << dtype << " shape " << g.sizes() << ": " << worst_difference(ours, ref));
      CHECK(ours.scalar_type() == dtype);
      CHECK(torch::equal(ours, ref));
    }
    for (const auto& shape :
         std::vector<std::vector<int64_t>>{{5, 16, 27}, {3, 64, 48}, {6, 4, 16}}) {
      const auto stack = torch::randn(shape);  // [k, r, c]
      auto x = stack.to(dtype);
      x = x / (x.norm(2, {-2, -1}, true) + kNsEps);
      const bool tall = shape[1] > shape[2];
      // Slice by slice with mm: LibTorch 1.13's bmm runs a naive loop below 400 multiply-adds
      // per output (the [6, 4, 16] stack), whose fp32 sums round differently from BLAS's.
      std::vector<torch::Tensor> slices;
      for (int64_t i = 0; i < shape[0]; ++i) {
        const auto slice = aten_steps(tall ? x[i].t() : x[i]);
        slices.push_back(tall ? slice.t() : slice);
      }
      const auto ref = torch::stack(slices);
      const auto ours = newton_schulz_batched(stack, dtype);
      INFO("dtype " << dtype << " stack " << stack.sizes() << ": " << worst_difference(ours, ref));
      CHECK(torch::equal(ours, ref));
    }
  }
}

TEST_CASE("A plan runs several stacks as newton_schulz_batched runs each", "[unit][musgd]") {
  torch::manual_seed(6);
  const std::vector<std::vector<int64_t>> shapes{{3, 16, 27}, {2, 40, 24}, {4, 8, 8}};
  NewtonSchulzPlan plan(shapes, torch::kBFloat16);
  const int threads = at::get_num_threads();
  for (int run = 0; run < 2; ++run) {  // the second run reuses the workspaces
    std::vector<torch::Tensor> stacks;
    for (const auto& s : shapes) stacks.push_back(torch::randn(s));
    stacks[2] = torch::Tensor();  // a bucket without gradients this step
    const auto results = plan.run(stacks);
    CHECK_FALSE(results[2].defined());
    for (size_t i = 0; i < 2; ++i) {
      const auto ref = newton_schulz_batched(stacks[i], torch::kBFloat16);
      INFO("run " << run << " stack " << stacks[i].sizes() << ": "
                  << worst_difference(results[i], ref));
      CHECK(torch::equal(results[i], ref));
    }
    // The schedule over threads moves slices between threads, never changes their arithmetic.
    at::set_num_threads(1);
    const auto serial = plan.run(stacks);
    at::set_num_threads(threads);
    for (size_t i = 0; i < 2; ++i) CHECK(torch::equal(serial[i], results[i]));
  }
  std::vector<torch::Tensor> wrong{torch::randn({3, 16, 26}), torch::Tensor(), torch::Tensor()};
  CHECK_THROWS_WITH(plan.run(wrong), Catch::Contains("built for"));
}
