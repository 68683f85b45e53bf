// runtime.memory_format: the auto rule on injected devices and CPUs (never this machine's), and a
// channels-last (nhwc) model against the same weights in NCHW: forward outputs, gradients and
// BatchNorm statistics agree within fp32 reordering, fused inference too, and the conversion
// keeps every parameter object (what an optimizer or the EMA already holds sees the new layout).
#include <catch2/catch.hpp>

#include "common/errors.h"
#include "model/batchnorm_fixtures.h"
#include "model/channels_last.h"
#include "model/memory_format.h"
#include "model/state_dict.h"
#include "model/tensor_checks.h"
#include "model/yolo_model.h"

using namespace detrain;
using namespace detrain::model;
using detrain::test::probe_loss;
using detrain::test::randomize_batchnorm;

namespace {

YoloModel build(const std::string& arch) {
  BuildOptions options;
  options.arch = arch;
  options.scale = "n";
  return YoloModel(options);
}

// A second model with `source`'s weights and buffers, in `format`.
YoloModel twin(const std::string& arch, const YoloModelImpl& source, MemoryFormat format) {
  YoloModel copy = build(arch);
  std::map<std::string, torch::Tensor> state;
  for (const auto& [name, t] : state_dict(source)) state.emplace(name, t);
  load_state_dict(*copy, state, "the source model");
  copy->set_memory_format(format);
  return copy;
}

// The tolerance of nhwc against nchw, relative to each tensor's largest magnitude: oneDNN runs
// other convolution kernels for each layout (other blocking, so another order of the fp32 sums),
// and train-mode BatchNorm over a few values per channel (12 at the last level here) amplifies
// the difference. Measured on a Zen 4 (AVX-512): outputs and BN statistics 9e-5 at most,
// gradients 4.2e-4; 2e-3 leaves a margin of about five for other CPUs' kernels, while a wrong
// layout (a channel read from the wrong place) errs by the order of the values themselves.
constexpr double kRel = 2e-3;

// `floor`: an absolute allowance for gradients that are exactly zero in exact arithmetic (a BN
// bias followed only by linear layers up to the next train-mode BN, which removes any constant
// shift), where every kernel order returns its own rounding noise of ~1e-9.
void check(const std::string& name, const torch::Tensor& nhwc, const torch::Tensor& nchw,
           double floor = 0) {
  const auto report = test::check_close(name, nhwc, nchw, kRel, floor);
  INFO(report.details);
  CHECK(report.ok);
}

bool channels_last(const torch::Tensor& t) {
  return t.is_contiguous(torch::MemoryFormat::ChannelsLast);
}

}  // namespace

TEST_CASE("runtime.memory_format: values, and what auto picks on each device and CPU",
          "[unit][model][memory-format]") {
  CHECK(parse_memory_format("auto") == MemoryFormatChoice::kAuto);
  CHECK(parse_memory_format("nchw") == MemoryFormatChoice::kNchw);
  CHECK(parse_memory_format("nhwc") == MemoryFormatChoice::kNhwc);
  CHECK_THROWS_WITH(parse_memory_format("NHWC"),
                    "config: runtime.memory_format is 'NHWC'; expected auto, nchw or nhwc");
  CHECK_THROWS_AS(parse_memory_format("channels_last"), ConfigError);

  MemoryFormatHost cuda, avx512, avx2, old_x86, arm;
  cuda.cuda = true;
  avx512.x86 = avx512.avx2 = avx512.avx512 = true;
  avx2.x86 = avx2.avx2 = true;
  old_x86.x86 = true;
  // Given values win everywhere.
  for (const MemoryFormatHost& host : {cuda, avx512, avx2, old_x86, arm}) {
    CHECK(resolve_memory_format(MemoryFormatChoice::kNchw, host).format == MemoryFormat::kNchw);
    CHECK(resolve_memory_format(MemoryFormatChoice::kNhwc, host).format == MemoryFormat::kNhwc);
  }
  const auto pick = [](const MemoryFormatHost& host) {
    return resolve_memory_format(MemoryFormatChoice::kAuto, host);
  };
  CHECK(pick(cuda).format == MemoryFormat::kNhwc);
  CHECK(pick(avx512).format == MemoryFormat::kNhwc);
  CHECK(pick(avx2).format == MemoryFormat::kNhwc);
  CHECK(pick(old_x86).format == MemoryFormat::kNchw);
  CHECK(pick(arm).format == MemoryFormat::kNchw);
  CHECK(describe(pick(avx512)) == "nhwc (auto: x86 CPU with AVX-512)");
  CHECK(describe(pick(avx2)) == "nhwc (auto: x86 CPU with AVX2)");
  CHECK(describe(pick(old_x86)) == "nchw (auto: x86 CPU without AVX2)");
  CHECK(describe(pick(cuda)) == "nhwc (auto: CUDA)");
  CHECK(describe(resolve_memory_format(MemoryFormatChoice::kNhwc, avx2)) ==
        "nhwc (runtime.memory_format=nhwc)");
  // A given value is decided without asking the machine; auto asks it (either answer is fine).
  CHECK(choose_memory_format("nchw", torch::kCPU).format == MemoryFormat::kNchw);
  CHECK(choose_memory_format("nhwc", torch::kCPU).format == MemoryFormat::kNhwc);
  CHECK(choose_memory_format("auto", torch::kCPU).reason.rfind("auto: ", 0) == 0);
  CHECK_THROWS_AS(choose_memory_format("fast", torch::kCPU), ConfigError);
}

TEST_CASE("set_memory_format converts the 4-D tensors in place and keeps every object",
          "[unit][model][memory-format]") {
  auto model = build("models/yolo26.yaml");
  const std::vector<torch::Tensor> before = model->parameters();  // what an optimizer holds
  const auto state_before = state_dict(*model);
  std::vector<torch::Tensor> values;
  for (const auto& [name, t] : state_before) values.push_back(t.clone());
  model->set_memory_format(MemoryFormat::kNhwc);
  CHECK(model->memory_format() == MemoryFormat::kNhwc);
  const std::vector<torch::Tensor> after = model->parameters();
  REQUIRE(after.size() == before.size());
  int64_t converted = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    CHECK(after[i].is_same(before[i]));
    if (before[i].dim() != 4) continue;
    CHECK(channels_last(before[i]));
    // A 3x3 conv weight with more than one input channel had another layout before.
    if (before[i].size(1) > 1 && before[i].size(2) > 1) {
      CHECK_FALSE(before[i].is_contiguous());
      ++converted;
    }
  }
  CHECK(converted > 20);
  const auto state_after = state_dict(*model);
  for (size_t i = 0; i < values.size(); ++i) CHECK(torch::equal(state_after[i].second, values[i]));
  model->set_memory_format(MemoryFormat::kNchw);  // and back
  for (const auto& p : model->parameters()) CHECK(p.is_contiguous());

  // The uint8 batch becomes the model's input: the same values, the asked layout.
  const torch::Tensor images = torch::randint(0, 256, {2, 3, 32, 64}, torch::kUInt8);
  const torch::Tensor nhwc = image_input(images, torch::kCPU, MemoryFormat::kNhwc);
  const torch::Tensor nchw = image_input(images, torch::kCPU, MemoryFormat::kNchw);
  CHECK(channels_last(nhwc));
  CHECK_FALSE(nhwc.is_contiguous());
  CHECK(nchw.is_contiguous());
  CHECK(nhwc.scalar_type() == torch::kFloat);
  CHECK(torch::equal(nhwc, nchw));
  CHECK(torch::equal(nchw, images.to(torch::kFloat) / 255.0));

  // For BF16 autocast: bf16 values equal to autocast's cast of the float batch, bit for bit, for
  // every byte value (a long run takes LibTorch's vector loop, the odd tail its scalar one).
  const torch::Tensor every_byte = torch::arange(256, torch::kInt)
                                       .to(torch::kUInt8)
                                       .repeat({3 * 7 * 13 + 1})
                                       .narrow(0, 0, 3 * 3 * 7 * 131);
  const torch::Tensor bytes = every_byte.view({3, 3, 7, 131});
  for (const MemoryFormat format : {MemoryFormat::kNhwc, MemoryFormat::kNchw}) {
    const torch::Tensor direct = image_input(bytes, torch::kCPU, format, /*bf16=*/true);
    CHECK(direct.scalar_type() == torch::kBFloat16);
    CHECK(direct.is_contiguous(torch_memory_format(format)));
    const torch::Tensor via_float = image_input(bytes, torch::kCPU, format).to(torch::kBFloat16);
    CHECK(torch::equal(direct.view(torch::kShort), via_float.view(torch::kShort)));
  }
}

TEST_CASE("an nhwc model computes what the nchw model computes: outputs, gradients, BN",
          "[unit][model][memory-format]") {
  for (const char* arch : {"models/yolo26.yaml", "models/yolo11-pose.yaml"}) {
    INFO(arch);
    torch::manual_seed(3);
    auto nchw = build(arch);
    randomize_batchnorm(*nchw, 5);
    auto nhwc = twin(arch, *nchw, MemoryFormat::kNhwc);
    const torch::Tensor images = torch::rand({2, 3, 64, 96});  // [B, 3, H, W], NCHW

    nchw->train();
    nhwc->train();
    const TrainOutput a = nchw->forward_train(images);
    const TrainOutput b = nhwc->forward_train(images);
    for (size_t i = 0; i < a.feats.size(); ++i) {
      CHECK(channels_last(b.feats[i]));  // activations run channels-last
      check("feats", b.feats[i], a.feats[i]);
    }
    check("boxes", b.one2many.boxes, a.one2many.boxes);
    check("scores", b.one2many.scores, a.one2many.scores);
    if (a.one2many.kpts.defined()) check("kpts", b.one2many.kpts, a.one2many.kpts);
    probe_loss(a).backward();
    probe_loss(b).backward();
    const auto pa = nchw->named_parameters(), pb = nhwc->named_parameters();
    const double largest = test::largest_gradient(*nchw);  // the model's largest gradient
    int64_t compared = 0;
    for (const auto& item : pa) {
      const torch::Tensor& ga = item.value().grad();
      const torch::Tensor& gb = pb[item.key()].grad();
      REQUIRE(ga.defined() == gb.defined());
      if (!ga.defined()) continue;
      INFO(item.key());
      check("grad", gb, ga, 1e-6 * largest);
      // Autograd lays a gradient out as its parameter: the optimizer's elementwise steps and
      // the MuSGD buckets see one layout.
      if (gb.dim() == 4) CHECK(gb.is_contiguous(torch::MemoryFormat::ChannelsLast));
      ++compared;
    }
    CHECK(compared > 100);
    const auto ba = nchw->named_buffers(), bb = nhwc->named_buffers();
    for (const auto& item : ba) {
      INFO(item.key());
      if (item.value().is_floating_point()) check("buffer", bb[item.key()], item.value());
    }

    // Inference, fused: the folded weights are new tensors and go channels-last too.
    nchw->eval();
    nhwc->eval();
    torch::NoGradGuard no_grad;
    nchw->fuse();
    nhwc->fuse();
    for (const auto& p : nhwc->parameters()) CHECK((p.dim() != 4 || channels_last(p)));
    const EvalOutput ea = nchw->forward_eval(images, 300);
    const EvalOutput eb = nhwc->forward_eval(images, 300);
    check("decoded", eb.decoded, ea.decoded);
  }
}
