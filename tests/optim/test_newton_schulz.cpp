// Newton-Schulz and the per-parameter Muon update, with each CPU kernel (native: LibTorch's bf16
// matmuls; emulated: fp32 gemms with software bf16 roundings) chosen explicitly, whatever the
// CPU: singular values land in the quintic's band, the stacked call equals per-matrix calls,
// each kernel gives its formula's bits, LibTorch's bf16 matmuls round once, and the golden cases
// of the reference (musgd_yolo26n.safetensors: ns.*, mu.*) are reproduced within the golden
// README's section 7.
#include <ATen/Parallel.h>
#include <ATen/cpu/Utils.h>

#include <catch2/catch.hpp>
#include <iostream>
#include <sstream>

#include "common/cpu_features.h"
#include "compat/torch_compat.h"
#include "model/safetensors.h"
#include "model/tensor_checks.h"
#include "optim/musgd.h"
#include "optim/newton_schulz.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::optim;

namespace {

// Both CPU kernels, each forced: on a CPU without bf16 instructions the native one is slow but
// there (ATen's generic bf16 gemm), so neither test depends on the CPU the tests run on.
const std::vector<NsKernel> kKernels{NsKernel::kEmulated, NsKernel::kNative};

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
  for (const auto kernel : kKernels) {
    for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
      for (const auto& shape : std::vector<std::vector<int64_t>>{{64, 576}, {96, 40}, {32, 32}}) {
        const auto g = torch::randn(shape);  // [r, c]
        const auto out = newton_schulz(g, dtype, kernel);
        REQUIRE(out.sizes() == g.sizes());
        CHECK(out.scalar_type() == dtype);
        const auto sv = torch::linalg_svdvals(out.to(torch::kFloat));  // [min(r, c)]
        INFO(ns_kernel_name(kernel)
             << " dtype " << dtype << " shape " << g.sizes() << " singular values "
             << sv.min().item<double>() << ".." << sv.max().item<double>());
        // The quintic's fixed coefficients map every singular value into about [0.5, 1.5]
        // rather than to 1 (reference-yolo.md 2.1 / the reference's docstring).
        CHECK(sv.min().item<double>() > 0.5);
        CHECK(sv.max().item<double>() < 1.5);
      }
    }
  }
}

TEST_CASE("Stacked Newton-Schulz equals the per-matrix call", "[unit][musgd]") {
  torch::manual_seed(4);
  for (const auto kernel : kKernels) {
    for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
      for (const auto& shape :
           std::vector<std::vector<int64_t>>{{5, 16, 27}, {3, 64, 48}, {4, 8, 8}}) {
        const auto stack = torch::randn(shape);  // [k, r, c]
        const auto batched = newton_schulz_batched(stack, dtype, kernel);
        REQUIRE(batched.sizes() == stack.sizes());
        double worst = 0;
        for (int64_t i = 0; i < stack.size(0); ++i) {
          const auto single = newton_schulz(stack[i], dtype, kernel);
          worst = std::max(
              worst,
              (batched[i].to(torch::kFloat) - single.to(torch::kFloat)).abs().max().item<double>());
        }
        INFO(ns_kernel_name(kernel) << " dtype " << dtype << " stack " << stack.sizes()
                                    << " max |batched - single| " << worst);
        // fp32: batched matmuls run the same gemm per slice and the per-matrix norm reduces the
        // same elements, so only reduction order can differ (a few ulp of values <= ~1.5).
        // bf16: one bf16 ulp at 1 is 2^-7; batched kernels may round the norm or a product once
        // differently, which the iteration carries to about one ulp of the output.
        CHECK(worst <= (dtype == torch::kFloat ? 1e-5 : 1.6e-2));
      }
    }
  }
}

TEST_CASE("Newton-Schulz reproduces the reference cases", "[parity][musgd]") {
  const std::string path = test::golden("musgd_yolo26n.safetensors");
  const auto golden = model::read_safetensors(path);
  for (const auto kernel : kKernels) {
    for (const char* c : {"a", "b", "c", "d", "e"}) {
      const std::string key = std::string("ns.") + c;
      const auto input = golden.at(key + ".input");  // [r, c]
      const auto ours = newton_schulz(input, torch::kBFloat16, kernel);
      const double vs_ref = rel_error(ours, golden.at(key + ".output"));
      const double vs_variant = rel_error(ours, golden.at("variant_f32acc." + key + ".output"));
      std::cout << ns_kernel_name(kernel) << " " << key << " " << input.sizes()
                << ": ||ours - ref|| / ||ref|| = " << vs_ref << ", vs variant_f32acc " << vs_variant
                << "\n";
      INFO(ns_kernel_name(kernel) << " " << key);
      CHECK(vs_ref <= kNsVsReference);
      CHECK(vs_variant <= kNsVsVariant);
    }
  }
}

TEST_CASE("muon_update reproduces the reference cases", "[parity][musgd]") {
  const std::string path = test::golden("musgd_yolo26n.safetensors");
  const auto golden = model::read_safetensors(path);
  for (const auto kernel : kKernels) {
    for (const char* c : {"a", "b", "c"}) {
      const std::string key = std::string("mu.") + c;
      INFO(ns_kernel_name(kernel) << " " << key);
      const auto grad = golden.at(key + ".grad");
      auto momentum = golden.at(key + ".momentum_in").clone();
      // The golden README section 5: beta 0.937, nesterov True.
      const auto update = muon_update(grad, momentum, 0.937, true, torch::kBFloat16, kernel);
      const auto ref = golden.at(key + ".update");
      REQUIRE(update.numel() == ref.numel());
      // The buffer is m * 0.937 then + 0.063 * g in fp32 (8.4.190's foreach ops): bit for bit
      // those ops on this machine's kernel path...
      const auto momentum_in = golden.at(key + ".momentum_in");
      CHECK(torch::equal(
          momentum, momentum_in.mul(0.937).add_(grad.reshape(momentum_in.sizes()), 1 - 0.937)));
      // ...and within one fp32 ulp (2^-23 of the buffer's largest magnitude) of the golden's:
      // ATen's kernel paths (ATEN_CPU_CAPABILITY default / avx2 / avx512) may fuse the add's
      // multiply (FMA) or not (the golden's: the generating machine's path).
      const auto buffer =
          test::check_close(key + " momentum", momentum, golden.at(key + ".momentum_out"), 0x1p-23);
      INFO(buffer.details);
      CHECK(buffer.ok);
      const double vs_ref = rel_error(update.reshape(ref.sizes()), ref);
      std::cout << ns_kernel_name(kernel) << " " << key << " " << grad.sizes()
                << ": ||update - ref|| / ||ref|| = " << vs_ref << "\n";
      CHECK(vs_ref <= kNsVsReference);
    }
  }
}

TEST_CASE("The emulated kernel gives the rounded fp32 formula's bits", "[unit][musgd]") {
  torch::manual_seed(5);
  // Wide, tall, square and the tiny shapes of yolo26n ([4, 16], [9, 80]); bf16 and fp32.
  const std::vector<std::vector<int64_t>> shapes{{16, 27}, {96, 40},  {32, 32}, {4, 16},
                                                 {80, 9},  {64, 576}, {2, 64}};
  for (const auto dtype : {torch::kBFloat16, torch::kFloat}) {
    for (const auto& shape : shapes) {
      const auto g = torch::randn(shape);  // [r, c]
      const auto ours = newton_schulz(g, dtype, NsKernel::kEmulated);
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
      const auto ours = newton_schulz_batched(stack, dtype, NsKernel::kEmulated);
      INFO("dtype " << dtype << " stack " << stack.sizes() << ": " << worst_difference(ours, ref));
      CHECK(torch::equal(ours, ref));
    }
  }
}

TEST_CASE("The native kernel gives the reference's ATen ops' bits", "[unit][musgd]") {
  torch::manual_seed(7);
  // Ultralytics 8.4.190's loop as written (functional bmm / baddbmm on [k, r, c], Python-float
  // coefficients) after the same normalisation; ours runs the same ops into buffers, so the
  // same kernels give the same bits on any CPU.
  const auto reference_steps = [](torch::Tensor x) {
    for (int step = 0; step < kNsSteps; ++step) {
      const auto a = x.bmm(x.transpose(-2, -1));
      const auto b = torch::baddbmm(a, a, a, kNsB, kNsC);
      x = torch::baddbmm(x, b, x, kNsA, 1.0);
    }
    return x;
  };
  // Tiny shapes take ATen's own small-matmul loop, the others oneDNN where the CPU has it.
  for (const auto dtype : {torch::kBFloat16, torch::kFloat}) {
    for (const auto& shape : std::vector<std::vector<int64_t>>{
             {1, 16, 27}, {1, 80, 9}, {1, 4, 16}, {1, 64, 576}, {5, 16, 27}, {3, 64, 48}}) {
      const auto stack = torch::randn(shape);  // [k, r, c]
      auto x = stack.to(dtype);
      x = x / ((shape[0] == 1 ? x.norm() : x.norm(2, {-2, -1}, true)) + kNsEps);
      const bool tall = shape[1] > shape[2];
      auto ref = reference_steps(tall ? x.transpose(-2, -1).contiguous() : x);
      if (tall) ref = ref.transpose(-2, -1);
      const auto ours = newton_schulz_batched(stack, dtype, NsKernel::kNative);
      INFO("dtype " << dtype << " stack " << stack.sizes() << ": " << worst_difference(ours, ref));
      CHECK(ours.scalar_type() == dtype);
      CHECK(torch::equal(ours, ref));
    }
  }
}

TEST_CASE("LibTorch's CPU bf16 matmuls accumulate in fp32 and round once", "[unit][musgd]") {
  // What the native kernel relies on for variant_f32acc's semantics: each bf16 mm / bmm /
  // baddbmm equals the fp32 computation on the same bf16 inputs rounded once to bf16, up to the
  // fp32 summation order (oneDNN sums in blocks). Rows of 2304 make bf16 accumulation visible:
  // its ~sqrt(2304) roundings of 2^-9 relative would miss the bound below by far.
  torch::manual_seed(8);
  const auto bf16 = [](const torch::Tensor& t) { return t.to(torch::kBFloat16); };
  const auto f32 = [](const torch::Tensor& t) { return t.to(torch::kFloat); };
  for (const auto& shape :
       std::vector<std::vector<int64_t>>{{3, 4, 16}, {3, 32, 288}, {2, 64, 2304}}) {
    const auto x = bf16(torch::randn(shape));                              // [k, r, c]
    const auto self = bf16(torch::randn({shape[0], shape[1], shape[1]}));  // [k, r, r]
    const auto xt = x.transpose(-2, -1);
    const auto abs_product = f32(x).abs().bmm(f32(xt).abs());  // [k, r, r]
    // The fp32 reordering slack: up to 2^-24 per term of each sum of absolute values (products
    // of the row, and the scaled self), with 4x spare.
    const auto sum_slack = abs_product * (static_cast<double>(shape[2]) * 0x1p-22);  // [k, r, r]
    struct Case {
      const char* op;
      torch::Tensor ours, exact, slack;
    };
    const std::vector<Case> cases{
        {"mm", x[0].mm(xt[0]).unsqueeze(0), f32(x[0]).mm(f32(xt[0])).unsqueeze(0),
         sum_slack.slice(0, 0, 1)},
        {"bmm", x.bmm(xt), f32(x).bmm(f32(xt)), sum_slack},
        {"baddbmm", torch::baddbmm(self, x, xt, kNsB, kNsC),
         kNsB * f32(self) + kNsC * f32(x).bmm(f32(xt)),
         std::abs(kNsC) * sum_slack + std::abs(kNsB) * f32(self).abs() * 0x1p-22}};
    for (const auto& c : cases) {
      const auto once = bf16(c.exact);  // the fp32 result rounded once
      // One bf16 ulp of the value (at most 2^-7 relative: bf16 keeps 8 significant bits).
      const auto ulp = f32(once).abs() * 0x1p-7;
      const auto diff = (f32(c.ours) - f32(once)).abs();
      const double equal_share = (c.ours == once).to(torch::kDouble).mean().item<double>();
      INFO(c.op << " on " << x.sizes() << ": " << worst_difference(c.ours, once)
                << ", share equal to the once-rounded fp32 result " << equal_share);
      CHECK(c.ours.scalar_type() == torch::kBFloat16);
      CHECK((diff <= ulp + c.slack).all().item<bool>());
      // Most elements are the exact same bits: the order only matters near a rounding tie.
      CHECK(equal_share >= 0.99);
    }
  }
}

TEST_CASE("Native and emulated kernels agree up to flipped bf16 roundings", "[unit][musgd]") {
  torch::manual_seed(9);
  // yolo26n-like shapes (tiny, tall, long rows) and a stack.
  for (const auto& shape : std::vector<std::vector<int64_t>>{
           {1, 4, 16}, {1, 80, 9}, {1, 32, 288}, {1, 64, 576}, {6, 32, 64}, {2, 256, 2304}}) {
    const auto stack = torch::randn(shape);  // [k, r, c]
    const auto native = newton_schulz_batched(stack, torch::kBFloat16, NsKernel::kNative);
    const auto emulated = newton_schulz_batched(stack, torch::kBFloat16, NsKernel::kEmulated);
    const double rel = rel_error(native, emulated);
    std::cout << "native vs emulated " << stack.sizes() << ": ||diff|| / ||emulated|| = " << rel
              << "\n";
    INFO(stack.sizes() << ": " << worst_difference(native, emulated));
    // The same rounding points; only fp32 summation order differs, which flips a rounding now
    // and then and the iteration carries: the bound of the reference cases vs variant_f32acc.
    CHECK(rel <= kNsVsVariant);
  }
}

TEST_CASE("auto takes the native kernel for bf16 exactly where the CPU has bf16 gemms",
          "[unit][musgd]") {
  const auto expected =
      compat::cpu_has_native_bf16_gemm() ? NsKernel::kNative : NsKernel::kEmulated;
  INFO("this CPU: native bf16 gemms " << compat::cpu_has_native_bf16_gemm());
  CHECK(cpu_ns_kernel(NsKernel::kAuto, torch::kBFloat16) == expected);
  CHECK(cpu_ns_kernel(NsKernel::kAuto, torch::kFloat) == NsKernel::kEmulated);
  for (const auto kernel : kKernels) {
    CHECK(cpu_ns_kernel(kernel, torch::kBFloat16) == kernel);
    CHECK(cpu_ns_kernel(kernel, torch::kFloat) == kernel);
    CHECK(NewtonSchulzPlan({{2, 3, 4}}, torch::kBFloat16, kernel).cpu_kernel() == kernel);
  }
  CHECK(NewtonSchulzPlan({{2, 3, 4}}, torch::kBFloat16).cpu_kernel() == expected);
#if defined(__x86_64__)
  // The query agrees with what LibTorch's own CPU probe (cpuinfo) reports, lowered by oneDNN's
  // ISA cap where one is set (as it lowers oneDNN's bf16 matmuls).
  const auto capabilities = at::cpu::get_cpu_capabilities();
  CpuFeatures probe;
  probe.x86 = true;
  probe.avx512_bf16 = capabilities.at("avx512_bf16").toBool();
  probe.amx_bf16 = capabilities.at("amx_bf16").toBool();
  probe = cap_to_onednn_isa(probe, onednn_isa_cap());
  CHECK(compat::cpu_has_native_bf16_gemm() == (probe.avx512_bf16 || probe.amx_bf16));
#endif
}

TEST_CASE("A plan runs several stacks as newton_schulz_batched runs each", "[unit][musgd]") {
  for (const auto kernel : kKernels) {
    torch::manual_seed(6);
    const std::vector<std::vector<int64_t>> shapes{{3, 16, 27}, {2, 40, 24}, {4, 8, 8}};
    NewtonSchulzPlan plan(shapes, torch::kBFloat16, kernel);
    const int threads = at::get_num_threads();
    for (int run = 0; run < 2; ++run) {  // the second run reuses the buffers
      std::vector<torch::Tensor> stacks;
      for (const auto& s : shapes) stacks.push_back(torch::randn(s));
      stacks[2] = torch::Tensor();  // a bucket without gradients this step
      // Copies: results may be views of the plan's buffers, overwritten by the next run.
      std::vector<torch::Tensor> results;
      for (const auto& r : plan.run(stacks)) results.push_back(r.defined() ? r.clone() : r);
      CHECK_FALSE(results[2].defined());
      for (size_t i = 0; i < 2; ++i) {
        const auto ref = newton_schulz_batched(stacks[i], torch::kBFloat16, kernel);
        INFO(ns_kernel_name(kernel) << " run " << run << " stack " << stacks[i].sizes() << ": "
                                    << worst_difference(results[i], ref));
        CHECK(torch::equal(results[i], ref));
      }
      // The schedule over threads moves work between threads, never changes its arithmetic.
      at::set_num_threads(1);
      const auto serial = plan.run(stacks);
      at::set_num_threads(threads);
      for (size_t i = 0; i < 2; ++i) CHECK(torch::equal(serial[i], results[i]));
    }
    std::vector<torch::Tensor> wrong{torch::randn({3, 16, 26}), torch::Tensor(), torch::Tensor()};
    CHECK_THROWS_WITH(plan.run(wrong), Catch::Contains("built for"));
  }
}
