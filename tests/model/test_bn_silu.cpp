// runtime.bn_silu: the fused training-mode BatchNorm + SiLU. Its kernels (portable and AVX-512,
// where this CPU has it) against sums and formulas evaluated in double here; the autograd node
// against LibTorch's batch_norm + silu (outputs, the three gradients, running statistics); and a
// whole model trained one step both ways. Shapes have channel and pixel counts that are not
// multiples of 16, so every vector tail and the second channel block are walked.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "common/errors.h"
#include "compat/torch_compat.h"
#include "model/batchnorm_fixtures.h"
#include "model/bn_silu.h"
#include "model/bn_silu_kernels.h"
#include "model/layers.h"
#include "model/state_dict.h"
#include "model/tensor_checks.h"
#include "model/yolo_model.h"

using namespace detrain;
using namespace detrain::model;

namespace {

void check(const std::string& name, const torch::Tensor& actual, const torch::Tensor& expected,
           double rel, double floor = 0) {
  const auto report = test::check_close(name, actual, expected, rel, floor);
  INFO(report.details);
  CHECK(report.ok);
}

std::vector<const bn_silu::Kernels*> kernel_sets() {
  std::vector<const bn_silu::Kernels*> sets{&bn_silu::scalar_kernels()};
  if (const auto* avx512 = bn_silu::avx512_kernels()) sets.push_back(avx512);
  const auto* plain = bn_silu::avx512_kernels_without_bf16();
  if (plain && plain != bn_silu::avx512_kernels()) sets.push_back(plain);
  if (const auto* avx2 = bn_silu::avx2_kernels()) sets.push_back(avx2);
  return sets;
}

torch::Tensor vector_tensor(const std::vector<float>& v) {
  return torch::tensor(std::vector<float>(v));
}
torch::Tensor vector_tensor(const std::vector<double>& v) {
  return torch::tensor(std::vector<double>(v));
}

// [C] per-channel values, broadcast over an NCHW batch in double.
torch::Tensor per_channel(const std::vector<float>& v) {
  return vector_tensor(v).to(torch::kDouble).view({1, -1, 1, 1});
}

}  // namespace

TEST_CASE("runtime.bn_silu: given values, and what auto picks", "[unit][model][bn-silu]") {
  CHECK(choose_bn_silu("aten", torch::kCPU).kernel == BnSiluKernel::kAten);
  CHECK(choose_bn_silu("fused", torch::kCPU).kernel == BnSiluKernel::kFused);
  CHECK(choose_bn_silu("aten", torch::Device("cuda:0")).kernel == BnSiluKernel::kAten);
  CHECK(choose_bn_silu("auto", torch::Device("cuda:0")).kernel == BnSiluKernel::kAten);
  CHECK_THROWS_WITH(choose_bn_silu("fused", torch::Device("cuda:0")),
                    "runtime.bn_silu=fused runs on the CPU only; use runtime.bn_silu=auto or aten "
                    "with runtime.device=cuda:0");
  CHECK_THROWS_AS(choose_bn_silu("fast", torch::kCPU), ConfigError);
  // auto on this CPU: fused exactly where a vector build runs at LibTorch's level here.
  const BnSiluDecision automatic = choose_bn_silu("auto", torch::kCPU);
  const compat::CpuVectorLevel level = compat::cpu_vector_level();
  CHECK((automatic.kernel == BnSiluKernel::kFused) ==
        ((bn_silu::avx512_kernels() && level.avx512) || (bn_silu::avx2_kernels() && level.avx2)));
  CHECK(describe(choose_bn_silu("aten", torch::kCPU)) == "aten (runtime.bn_silu=aten)");
  // "fused, <kernels> (...)": the widest kernels up to LibTorch's own level here.
  const std::string fused = describe(choose_bn_silu("fused", torch::kCPU));
  const bool named = fused == "fused, avx512-bf16 (runtime.bn_silu=fused)" ||
                     fused == "fused, avx512 (runtime.bn_silu=fused)" ||
                     fused == "fused, avx2 (runtime.bn_silu=fused)" ||
                     fused == "fused, scalar (runtime.bn_silu=fused)";
  INFO(fused);
  CHECK(named);
}

TEST_CASE("bn_silu kernels: sums and passes equal double-precision formulas",
          "[unit][model][bn-silu]") {
  // [N, C, H, W] = [2, C, 5, 7]: 35 pixels (two vectors and a tail of 3 per NCHW plane);
  // C = 19 (a tail of 3 lanes), 40, and 136 (past one 128-channel NHWC block).
  for (const int64_t channels : {19, 40, 136}) {
    const int64_t batch = 2, height = 5, width = 7;
    torch::manual_seed(channels);
    const torch::Tensor source = torch::randn({batch, channels, height, width}) * 1.5 + 0.4;
    const torch::Tensor dy_source = torch::randn({batch, channels, height, width});
    std::vector<float> mean(channels), scale(channels), shift(channels), a(channels), b(channels);
    for (int64_t c = 0; c < channels; ++c) {
      mean[c] = 0.4f + 0.01f * static_cast<float>(c % 7);
      scale[c] = 0.6f + 0.05f * static_cast<float>(c % 11);
      shift[c] = -0.5f + 0.07f * static_cast<float>(c % 13);
      a[c] = -0.02f * static_cast<float>(c % 5);
      b[c] = 0.03f * static_cast<float>(c % 3) - 0.01f;
    }
    for (const torch::ScalarType dtype : {torch::kFloat, torch::kBFloat16}) {
      const bool bf16 = dtype == torch::kBFloat16;
      const torch::Tensor x = source.to(dtype), dy = dy_source.to(dtype);
      // The exact values, from the very numbers the kernels read (bf16 ones for bf16 data).
      const torch::Tensor xd = x.to(torch::kDouble), dyd = dy.to(torch::kDouble);
      const torch::Tensor z = xd * per_channel(scale) + per_channel(shift);
      const torch::Tensor s = torch::sigmoid(z);
      const torch::Tensor y_exact = z * s;
      const torch::Tensor dz_exact = dyd * s * (1 + z * (1 - s));
      const std::vector<int64_t> dims{0, 2, 3};
      // The kernels' sums are about an origin; the mean's values serve as one.
      const torch::Tensor sum_exact = (xd - per_channel(mean)).sum(dims);
      const torch::Tensor sq_exact = (xd - per_channel(mean)).pow(2).sum(dims);
      const torch::Tensor dz_sum_exact = dz_exact.sum(dims);
      const torch::Tensor dzc_sum_exact = (dz_exact * (xd - per_channel(mean))).sum(dims);
      // Outputs are rounded to the data's dtype: half a bf16 step is 2^-9 of the value; float
      // outputs carry the exp and division roundings, a few float steps.
      const double out_rel = bf16 ? 1.0 / 256 : 1e-6;

      for (const bool nhwc : {false, true}) {
        const auto layout_format =
            nhwc ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
        const torch::Tensor xl = x.contiguous(layout_format), dyl = dy.contiguous(layout_format);
        const bn_silu::Layout layout{batch, channels, height * width, nhwc};
        const bn_silu::Dtype kdtype = bf16 ? bn_silu::Dtype::kBf16 : bn_silu::Dtype::kFloat;
        for (const bn_silu::Kernels* k : kernel_sets()) {
          INFO(k->name << (bf16 ? " bf16 " : " float ") << (nhwc ? "nhwc" : "nchw") << " C "
                       << channels);
          // Units split in two ranges, as two threads would take them.
          const int64_t units = layout.units(), half = units / 2 + 1;
          std::vector<double> sum(channels), sq(channels), dz_sum(channels), dzc_sum(channels);
          torch::Tensor dz = torch::empty_like(xl);
          for (const auto& [begin, end] : {std::pair{int64_t{0}, half}, std::pair{half, units}}) {
            k->shifted_sums(xl.data_ptr(), kdtype, layout, mean.data(), begin, end, sum.data(),
                            sq.data());
            k->backward_sums(xl.data_ptr(), dyl.data_ptr(), dz.data_ptr(), kdtype, layout,
                             scale.data(), shift.data(), mean.data(), begin, end, dz_sum.data(),
                             dzc_sum.data());
          }
          // Float partial sums of at most 32 rows or 1024 pixels, then double: a few float
          // steps of the largest partial sum.
          check("sum about the origin", vector_tensor(sum), sum_exact, 1e-6, 1e-6);
          check("squared deviations", vector_tensor(sq), sq_exact, 1e-6);
          check("sum dz", vector_tensor(dz_sum), dz_sum_exact, 1e-5, 1e-6);
          check("sum dz (x - mean)", vector_tensor(dzc_sum), dzc_sum_exact, 1e-5, 1e-6);

          check("dz", dz.to(torch::kDouble), dz_exact, out_rel);

          torch::Tensor y = torch::empty_like(xl), dx = torch::empty_like(xl);
          k->forward(xl.data_ptr(), y.data_ptr(), kdtype, layout, scale.data(), shift.data(), 0,
                     units);
          k->backward_apply(xl.data_ptr(), dz.data_ptr(), dx.data_ptr(), kdtype, layout,
                            scale.data(), a.data(), b.data(), 0, units);
          // The exact dx from the dz the kernel stored (bf16: rounded once more on the way out).
          const torch::Tensor dx_from_dz =
              dz.to(torch::kDouble) * per_channel(scale) + xd * per_channel(a) + per_channel(b);
          check("y", y.to(torch::kDouble), y_exact, out_rel);
          check("dx", dx.to(torch::kDouble), dx_from_dz, out_rel);
          // In place, as the node runs it: dz's buffer becomes dx.
          k->backward_apply(xl.data_ptr(), dz.data_ptr(), dz.data_ptr(), kdtype, layout,
                            scale.data(), a.data(), b.data(), 0, units);
          CHECK(torch::equal(dz, dx));
        }
      }
    }
  }
}

TEST_CASE("bn_silu kernels: bf16 rounding is to nearest even, NaN stays NaN",
          "[unit][model][bn-silu]") {
  // scale 1, shift 0: y = silu(x). Values chosen so that silu's float result sits on both sides
  // of bf16 ties; LibTorch's own float->bf16 conversion (round to nearest even) is the reference.
  torch::manual_seed(4);
  const torch::Tensor x = torch::cat({torch::randn({1, 1, 1, 4093}) * 4,
                                      torch::tensor({NAN, INFINITY, -INFINITY}).view({1, 1, 1, 3})},
                                     3)
                              .to(torch::kBFloat16);
  const bn_silu::Layout layout{1, 1, x.numel(), false};
  const float one = 1.0f, zero = 0.0f;
  for (const bn_silu::Kernels* k : kernel_sets()) {
    INFO(k->name);
    torch::Tensor y = torch::empty_like(x);
    k->forward(x.data_ptr(), y.data_ptr(), bn_silu::Dtype::kBf16, layout, &one, &zero, 0, 1);
    // Ours in float, rounded by LibTorch: equal to ours rounded by the kernel, bit for bit.
    torch::Tensor y_float = torch::empty(x.sizes(), torch::kFloat);
    const torch::Tensor x_float = x.to(torch::kFloat);
    k->forward(x_float.data_ptr(), y_float.data_ptr(), bn_silu::Dtype::kFloat, layout, &one, &zero,
               0, 1);
    const torch::Tensor finite = torch::isfinite(y_float);
    CHECK(
        torch::equal(y.masked_select(finite), y_float.to(torch::kBFloat16).masked_select(finite)));
    CHECK(std::isnan(y[0][0][0][4093].item<float>()));
    CHECK(std::isnan(y[0][0][0][4094].item<float>()) ==
          std::isnan(y_float[0][0][0][4094].item<float>()));
  }
}

TEST_CASE("fused_bn_silu equals batch_norm + silu: output, gradients, running statistics",
          "[unit][model][bn-silu]") {
  for (const bool nhwc : {false, true}) {
    for (const int64_t channels : {19, 64}) {
      INFO((nhwc ? "nhwc" : "nchw") << " C " << channels);
      torch::manual_seed(11 + channels);
      torch::nn::BatchNorm2d ref(torch::nn::BatchNorm2dOptions(channels).eps(1e-3).momentum(0.03));
      torch::nn::BatchNorm2d ours(torch::nn::BatchNorm2dOptions(channels).eps(1e-3).momentum(0.03));
      test::randomize_batchnorm(*ref, 2);
      test::randomize_batchnorm(*ours, 2);
      const auto format =
          nhwc ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
      const torch::Tensor base = (torch::randn({3, channels, 9, 6}) * 2 + 0.5).contiguous(format);
      const torch::Tensor dy = torch::randn({3, channels, 9, 6});
      torch::Tensor xa = base.clone().requires_grad_(true);
      torch::Tensor xb = base.clone().requires_grad_(true);
      REQUIRE(fused_bn_silu_supports(xb, *ours));

      const torch::Tensor ya = torch::silu(ref(xa));
      const torch::Tensor yb = fused_bn_silu(xb, *ours);
      CHECK(yb.is_contiguous(format));
      (ya * dy).sum().backward();
      (yb * dy).sum().backward();
      // float: the two compute the same formulas in other orders (sums, exp); dx carries the
      // cancellation of dz - mean(dz) - xhat mean(dz xhat), a few float steps of |dz|.
      check("y", yb, ya, 1e-6);
      check("dx", xb.grad(), xa.grad(), 1e-5);
      CHECK(xb.grad().is_contiguous(format));
      check("d weight", ours->weight.grad(), ref->weight.grad(), 1e-5);
      check("d bias", ours->bias.grad(), ref->bias.grad(), 1e-5);
      check("running mean", ours->running_mean, ref->running_mean, 1e-6);
      check("running var", ours->running_var, ref->running_var, 1e-6);
      CHECK(ours->num_batches_tracked.item<int64_t>() == ref->num_batches_tracked.item<int64_t>());
      CHECK(ours->num_batches_tracked.item<int64_t>() == 1);
    }
  }
  // A strided batch (a channel slice) is read through an NCHW copy.
  torch::nn::BatchNorm2d ref(torch::nn::BatchNorm2dOptions(8).eps(1e-3).momentum(0.03));
  torch::nn::BatchNorm2d ours(torch::nn::BatchNorm2dOptions(8).eps(1e-3).momentum(0.03));
  const torch::Tensor wide =
      torch::randn({2, 16, 5, 5}).contiguous(torch::MemoryFormat::ChannelsLast);
  const torch::Tensor slice = wide.narrow(1, 4, 8);
  check("strided y", fused_bn_silu(slice, *ours), torch::silu(ref(slice)), 1e-6);
}

TEST_CASE("fused_bn_silu's one-pass statistics hold where a naive sum of squares cancels",
          "[unit][model][bn-silu]") {
  // The node takes the mean and the variance in one pass about a sampled origin. Hard cases for
  // that: channels whose mean is 10^3 to 10^4 times their spread (a sum of squares about 0 would
  // keep no digit of the variance in float), and a batch whose first rows are a constant
  // letterbox border (an origin from the first pixels would sit far from the mean). Against
  // double-precision two-pass statistics: 1e-5 relative, a few float steps of the partial sums.
  torch::manual_seed(31);
  for (const bool nhwc : {false, true})
    for (const bool border : {false, true}) {
      INFO((nhwc ? "nhwc" : "nchw") << (border ? ", border" : ""));
      const int64_t channels = 6;
      torch::Tensor x = torch::randn({4, channels, 20, 12}, torch::kDouble) * 0.05;
      if (border)
        x.narrow(0, 0, 1).narrow(2, 0, 6).fill_(1.5);  // image 0's top rows, 10 sigma away
      else
        x += torch::tensor({100.0, -300.0, 0.0, 7.0, 500.0, 1.0}, torch::kDouble)
                 .view({1, -1, 1, 1});
      const torch::Tensor xf = x.to(torch::kFloat)
                                   .contiguous(nhwc ? torch::MemoryFormat::ChannelsLast
                                                    : torch::MemoryFormat::Contiguous);
      const torch::Tensor xd = xf.to(torch::kDouble);
      const torch::Tensor mean = xd.mean({0, 2, 3});
      const torch::Tensor var = (xd - mean.view({1, -1, 1, 1})).pow(2).mean({0, 2, 3});
      const double count = static_cast<double>(xf.numel() / channels);

      torch::nn::BatchNorm2d bn(torch::nn::BatchNorm2dOptions(channels).eps(1e-3).momentum(1.0));
      const torch::Tensor y =
          fused_bn_silu(xf, *bn);  // momentum 1: the running values are the batch's
      check("mean", bn->running_mean.to(torch::kDouble), mean, 1e-5, 1e-6);
      check("variance", bn->running_var.to(torch::kDouble), var * count / (count - 1), 1e-5);
      const torch::Tensor z =
          (xd - mean.view({1, -1, 1, 1})) / (var.view({1, -1, 1, 1}) + 1e-3).sqrt();
      // y = x * scale + shift, as LibTorch's kernel forms it, cancels for a mean 10^4 spreads away
      // (float's step at 10^4 is 10^-3): y is checked where that form keeps float's precision.
      if (border) check("y", y.to(torch::kDouble), z * torch::sigmoid(z), 1e-5, 1e-5);
    }
}

TEST_CASE("fused_bn_silu in bf16 is as close to the exact result as batch_norm + silu",
          "[unit][model][bn-silu]") {
  // Under CPU autocast the conv output is bf16 and BatchNorm's weights stay float; LibTorch
  // rounds z to bf16 before the SiLU, the fused node does not. Both against double arithmetic
  // on the same bf16 input: within a bf16 step (2^-8) of the largest output.
  torch::manual_seed(21);
  for (const bool nhwc : {false, true}) {
    INFO((nhwc ? "nhwc" : "nchw"));
    const auto format = nhwc ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
    torch::nn::BatchNorm2d bn(torch::nn::BatchNorm2dOptions(24).eps(1e-3).momentum(0.03));
    test::randomize_batchnorm(*bn, 3);
    const torch::Tensor x =
        (torch::randn({2, 24, 12, 10}) * 3 + 1).to(torch::kBFloat16).contiguous(format);
    const torch::Tensor xd = x.to(torch::kDouble);
    const torch::Tensor mean = xd.mean({0, 2, 3}, true);
    const torch::Tensor var = xd.var({0, 2, 3}, false, true);
    const torch::Tensor z = (xd - mean) / torch::sqrt(var + 1e-3) *
                                bn->weight.detach().to(torch::kDouble).view({1, -1, 1, 1}) +
                            bn->bias.detach().to(torch::kDouble).view({1, -1, 1, 1});
    const torch::Tensor exact = z * torch::sigmoid(z);
    const torch::Tensor fused = fused_bn_silu(x, *bn);
    CHECK(fused.scalar_type() == torch::kBFloat16);
    check("bf16 y", fused.to(torch::kDouble), exact, 1.0 / 256);
    const torch::Tensor aten = torch::silu(bn(x));
    check("aten bf16 y", aten.to(torch::kDouble), exact, 1.0 / 128);
  }
}

TEST_CASE("a model trains one step alike with runtime.bn_silu=fused and aten",
          "[unit][model][bn-silu]") {
  for (const MemoryFormat format : {MemoryFormat::kNchw, MemoryFormat::kNhwc}) {
    INFO(memory_format_name(format));
    BuildOptions options;
    options.arch = "models/yolo26.yaml";
    options.scale = "n";
    torch::manual_seed(3);
    YoloModel aten(options);
    test::randomize_batchnorm(*aten, 5);
    YoloModel fused(options);
    std::map<std::string, torch::Tensor> state;
    for (const auto& [name, t] : state_dict(*aten)) state.emplace(name, t);
    load_state_dict(*fused, state, "the aten model");
    aten->set_memory_format(format);
    fused->set_memory_format(format);
    set_bn_silu_kernel(*fused, BnSiluKernel::kFused);
    aten->train();
    fused->train();
    const torch::Tensor images = torch::rand({2, 3, 64, 96});
    test::probe_loss(aten->forward_train(images)).backward();
    test::probe_loss(fused->forward_train(images)).backward();

    const auto pa = aten->named_parameters(), pb = fused->named_parameters();
    const double largest = test::largest_gradient(*aten);
    int64_t compared = 0;
    for (const auto& item : pa) {
      const torch::Tensor& ga = item.value().grad();
      if (!ga.defined()) continue;
      INFO(item.key());
      // The same tolerance as nhwc against nchw (test_memory_format.cpp): float sums in another
      // order, amplified by train-mode BN over few values per channel at the last level.
      check("grad", pb[item.key()].grad(), ga, 2e-3, 1e-6 * largest);
      ++compared;
    }
    CHECK(compared > 100);
    const auto ba = aten->named_buffers(), bb = fused->named_buffers();
    for (const auto& item : ba) {
      INFO(item.key());
      if (item.value().is_floating_point())
        check("buffer", bb[item.key()], item.value(), 2e-3);
      else
        CHECK(torch::equal(bb[item.key()], item.value()));
    }
  }
}
