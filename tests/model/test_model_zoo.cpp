// The model zoo without forward passes: parameter counts and the MuSGD census of every
// family (YOLO26, YOLO11, YOLOv8), task and scale against Ultralytics 8.4.190's models, the scale
// rules of the YAML interpreter, head initialisation, parameter roles and the builder's error
// messages.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "model/census.h"
#include "model/state_dict.h"
#include "model/yolo_model.h"
#include "optim/musgd_census.h"
#include "optim/param_roles.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::model;

namespace {

YoloModel build(const std::string& arch, const std::string& scale, int64_t nc = 0) {
  BuildOptions options;
  options.arch = arch;
  options.scale = scale;
  options.nc = nc;
  return YoloModel(options);
}

// The census of one (architecture, scale, nc) against census.json, which tests/golden/
// gen_census.py makes from Ultralytics 8.4.190's models (parameters, tensors, MuSGD matrices).
void check_census(const nlohmann::json& row) {
  const auto arch = row.at("arch").get<std::string>(), scale = row.at("scale").get<std::string>();
  const auto nc = row.at("nc").get<int64_t>();
  INFO(arch << " scale " << scale << " nc " << nc);
  auto model = build(arch, scale, nc);
  const auto totals = model_totals(*model);
  CHECK(totals.parameters == row.at("parameters").get<int64_t>());
  CHECK(totals.tensors == row.at("tensors").get<int64_t>());
  const auto c = optim::census(model->param_infos());
  CHECK(c.tensors == row.at("tensors").get<int64_t>());
  CHECK(c.matrices == row.at("matrices").get<int64_t>());
  CHECK(c.frozen_matrices == row.at("frozen_matrices").get<int64_t>());
  CHECK(c.distinct_shapes == row.at("distinct_shapes").get<int64_t>());
  CHECK(c.keys == row.at("keys").get<int64_t>());
  CHECK(c.row_buckets == row.at("row_buckets").get<int64_t>());
  CHECK(c.col_buckets == row.at("col_buckets").get<int64_t>());
}

const nlohmann::json& census_golden() {
  static const nlohmann::json rows = [] {
    std::ifstream in(test::golden("census.json"));
    return nlohmann::json::parse(in).at("models");
  }();
  return rows;
}

// Every scale of `arch` at every nc the golden holds (5 per nc).
void check_family(const std::string& arch) {
  int rows = 0;
  for (const auto& row : census_golden()) {
    if (row.at("arch") != arch) continue;
    check_census(row);
    ++rows;
  }
  CHECK(rows >= 5);
  CHECK(rows % 5 == 0);
}

}  // namespace

TEST_CASE("yolo26 detect parameters and census equal Ultralytics 8.4.190 at every scale",
          "[parity][model]") {
  check_family("models/yolo26.yaml");
}

TEST_CASE("yolo26 pose parameters and census equal Ultralytics 8.4.190 at every scale",
          "[parity][model]") {
  check_family("models/yolo26-pose.yaml");
}

TEST_CASE("yolo11 detect parameters and census equal Ultralytics 8.4.190 at every scale",
          "[parity][model]") {
  check_family("models/yolo11.yaml");
}

TEST_CASE("yolo11 pose parameters and census equal Ultralytics 8.4.190 at every scale",
          "[parity][model]") {
  check_family("models/yolo11-pose.yaml");
}

TEST_CASE("yolov8 detect parameters and census equal Ultralytics 8.4.190 at every scale",
          "[parity][model]") {
  check_family("models/yolov8.yaml");
}

TEST_CASE("yolov8 pose parameters and census equal Ultralytics 8.4.190 at every scale",
          "[parity][model]") {
  check_family("models/yolov8-pose.yaml");
}

TEST_CASE("yolo26n census groups and largest buckets", "[unit][model]") {
  const auto c = optim::census(build("models/yolo26.yaml", "n")->param_infos());
  // reference-yolo.md 2.4 (log line) and golden README 5: 114 BN weights (24 + 90), 126 biases
  // (30 + 96), 126 Muon matrices (30 cls-tower + 96).
  CHECK(c.groups[0].tensors == 0);
  CHECK(c.groups[1].tensors == 0);
  CHECK(c.groups[2].tensors == 24);
  CHECK(c.groups[3].tensors == 90);
  CHECK(c.groups[4].tensors == 30);
  CHECK(c.groups[5].tensors == 96);
  CHECK(c.groups[6].matrices == 30);
  CHECK(c.groups[7].matrices == 96);
  // Multiplicities from reference-yolo.md section 7: (32,32,3,3) x12 and (80,80,1,1) x12 lead.
  REQUIRE(c.buckets.size() >= 3);
  CHECK(c.buckets[0].count == 12);
  CHECK(c.buckets[1].count == 12);
  CHECK(c.buckets[2].count == 10);
  CHECK(c.buckets[2].shape == std::vector<int64_t>{16, 16, 3, 3});
  int64_t total = 0;
  for (const auto& b : c.buckets) total += b.count;
  CHECK(total == 126);
  CHECK(c.matrices_per_key() == Approx(3.0));
}

TEST_CASE("layer totals count leaf modules as the reference does", "[unit][model]") {
  // YAML comments of the reference's yolo26.yaml: 260 / 260 / 280 / 392 / 392 layers.
  const std::vector<std::pair<const char*, int64_t>> expected{
      {"n", 260}, {"s", 260}, {"m", 280}, {"l", 392}, {"x", 392}};
  for (const auto& [scale, layers] : expected) {
    INFO("yolo26" << scale);
    CHECK(model_totals(*build("models/yolo26.yaml", scale)).layers == layers);
  }
}

TEST_CASE("scale rules come from the YAML", "[unit][model]") {
  // Output widths of reference-yolo.md 1.2 for layers 0..22 at n, s, m, l, x (Upsample keeps
  // its input width, Concat sums its inputs').
  const std::vector<std::vector<int64_t>> widths{
      {16,  32,  64,  64,  128, 128, 128, 256, 256, 256, 256, 256,
       384, 128, 128, 256, 64,  64,  192, 128, 128, 384, 256},
      {32,  64,  128, 128, 256, 256, 256, 512, 512, 512, 512, 512,
       768, 256, 256, 512, 128, 128, 384, 256, 256, 768, 512},
      {64,   128, 256, 256,  512, 512, 512, 512, 512, 512,  512, 512,
       1024, 512, 512, 1024, 256, 256, 768, 512, 512, 1024, 512},
      {64,   128, 256, 256,  512, 512, 512, 512, 512, 512,  512, 512,
       1024, 512, 512, 1024, 256, 256, 768, 512, 512, 1024, 512},
      {96,   192, 384, 384,  768, 768, 768,  768, 768, 768,  768, 768,
       1536, 768, 768, 1536, 384, 384, 1152, 768, 768, 1536, 768}};
  const char* scales[] = {"n", "s", "m", "l", "x"};
  for (size_t s = 0; s < 5; ++s) {
    for (const char* arch : {"models/yolo26.yaml", "models/yolo11.yaml"}) {
      BuildOptions options;
      options.arch = arch;
      options.scale = scales[s];
      const auto net = build_network(options);
      INFO(arch << " " << scales[s]);
      REQUIRE(net.rows.size() == 24);
      for (size_t i = 0; i < 23; ++i) {
        INFO("layer " << i);
        CHECK(net.rows[i].out_channels == widths[s][i]);
      }
      // Repeats: 2 -> 1 at depth 0.5, 2 at depth 1 (YOLO26's layer 22 keeps 1 everywhere).
      const bool deep = s >= 3;
      CHECK(net.rows[2].args.find(deep ? ", 2, " : ", 1, ") != std::string::npos);
      const std::string layer22 = net.rows[22].args;
      if (std::string(arch) == "models/yolo26.yaml")
        CHECK(layer22 == "[" + std::to_string(widths[s][21]) + ", " +
                             std::to_string(widths[s][22]) + ", 1, True, 0.5, True]");
      // C3k forced at m/l/x: layer 2 (c3k False in the YAML) becomes True.
      CHECK((net.rows[2].args.find("True") != std::string::npos) == (s >= 2));
      CHECK(net.arch.strides == std::vector<int64_t>{8, 16, 32});
    }
  }
}

TEST_CASE("head initialisation: biases and one-to-one copy and frozen DFL", "[unit][model]") {
  auto model = build("models/yolo26.yaml", "n");
  const auto params = model->head()->named_parameters();
  // Box bias 2.0; class prior log(5 / nc / (640 / stride)^2) per level (reference bias_init).
  for (int level = 0; level < 3; ++level) {
    const double stride = 8 << level;
    const double prior = std::log(5.0 / 80 / ((640 / stride) * (640 / stride)));
    for (const char* branch : {"", "one2one_"}) {
      const std::string l = std::to_string(level);
      CHECK(torch::allclose(params[std::string(branch) + "cv2." + l + ".2.bias"],
                            torch::full({4}, 2.0)));
      CHECK(torch::allclose(params[std::string(branch) + "cv3." + l + ".2.bias"],
                            torch::full({80}, prior)));
    }
  }
  // The one-to-one towers start as exact copies of the one-to-many towers.
  int64_t compared = 0;
  for (const auto& item : params) {
    if (item.key().rfind("one2one_", 0) != 0) continue;
    CHECK(torch::equal(item.value(), params[item.key().substr(8)]));
    ++compared;
  }
  CHECK(compared == 66);  // per branch: 3 x (8 box-tower + 14 cls-tower tensors)
  auto yolo11 = build("models/yolo11.yaml", "n");
  const auto dfl = yolo11->head()->named_parameters()["dfl.conv.weight"];
  CHECK_FALSE(dfl.requires_grad());
  CHECK(torch::equal(dfl.view(-1), torch::arange(16, torch::kFloat)));
}

TEST_CASE("parameter roles come from module types", "[unit][model]") {
  auto model = build("models/yolo11.yaml", "n");
  const auto infos = model->param_infos();
  const auto named = model->named_parameters();
  REQUIRE(infos.size() == named.size());
  int64_t norms = 0, biases = 0, cls = 0, frozen = 0;
  for (size_t i = 0; i < infos.size(); ++i) {
    const auto& info = infos[i];
    CHECK(info.name == named.keys()[i]);  // named_parameters() order
    CHECK(info.param.is_same(named.values()[i]));
    const bool bn_name = info.name.find(".bn.") != std::string::npos;
    CHECK(info.in_norm == bn_name);
    CHECK(info.is_bias ==
          (info.name.size() > 5 && info.name.substr(info.name.size() - 5) == ".bias"));
    const bool cls_name = info.name.rfind("model.23.cv3.", 0) == 0;
    CHECK(info.in_cls_tower == cls_name);
    norms += info.in_norm;
    biases += info.is_bias;
    cls += info.in_cls_tower;
    frozen += !info.trainable;
  }
  CHECK(frozen == 1);    // model.23.dfl.conv.weight
  CHECK(cls == 3 * 14);  // per level: 4 Convs (weight, BN weight, BN bias) + final weight, bias
  CHECK(norms > 0);
  CHECK(biases > norms / 2);
}

TEST_CASE("architecture names resolve with or without the scale", "[unit][model]") {
  CHECK(resolve_arch("models/yolo26.yaml").second.empty());
  const auto [path, scale] = resolve_arch("yolo26s");
  CHECK(scale == "s");
  CHECK(path.find("models/yolo26.yaml") != std::string::npos);
  CHECK(resolve_arch("yolo11n-pose.yaml").first.find("models/yolo11-pose.yaml") !=
        std::string::npos);
  CHECK(resolve_arch("yolo11n-pose.yaml").second == "n");
  BuildOptions options;
  options.arch = "yolo26m";
  CHECK(build_network(options).arch.name() == "yolo26m");
  options.arch = "yolo26n-pose";
  CHECK(build_network(options).arch.name() == "yolo26n-pose");
  options.scale = "s";
  CHECK_THROWS_WITH(build_network(options), Catch::Contains("names scale n but scale s"));
}

TEST_CASE("bad architecture files fail naming the file and row with a fix", "[unit][model]") {
  test::TempDir dir("model-yaml");
  auto error_of = [&](const std::string& yaml) -> std::string {
    test::write_text(dir.file("net.yaml"), yaml);
    BuildOptions options;
    options.arch = dir.file("net.yaml");
    options.scale = "n";
    try {
      build_network(options);
    } catch (const ModelError& e) {
      return e.what();
    }
    return "";
  };
  const std::string prefix = "nc: 4\nscales:\n  n: [0.5, 0.25, 1024]\nbackbone:\n";
  const std::string ok_head = "head:\n  - [[1, 2, 3], 1, Detect, [nc]]\n";
  const std::string ok_rows =
      "  - [-1, 1, Conv, [64, 3, 8]]\n  - [-1, 1, Conv, [64, 3, 1]]\n"
      "  - [-1, 1, Conv, [64, 3, 2]]\n  - [-1, 1, Conv, [64, 3, 2]]\n";
  CHECK(error_of(prefix + ok_rows + ok_head).empty());  // a minimal valid network

  CHECK_THAT(
      error_of(prefix + "  - [-1, 1, Conv2, [64, 3, 2]]\n" + ok_head),
      Catch::Contains("layer 0: unknown module 'Conv2'") && Catch::Contains("did you mean 'Conv'"));
  CHECK_THAT(error_of(prefix + "  - [5, 1, Conv, [64, 3, 2]]\n" + ok_head),
             Catch::Contains("layer 0: 'from' 5 does not name an earlier layer"));
  CHECK_THAT(error_of(prefix + "  - [-1, 1, Conv, [64, x, 2]]\n" + ok_head),
             Catch::Contains("argument 3 is 'x', expected an integer"));
  CHECK_THAT(error_of(prefix + ok_rows + "head:\n  - [-1, 1, Conv, [64]]\n"),
             Catch::Contains("the last row must be a head"));
  CHECK_THAT(error_of(prefix + ok_rows + "head:\n  - [[1, 2, 3], 1, Pose, [nc, kpt_shape]]\n"),
             Catch::Contains("needs kpt_shape"));
  CHECK_THAT(error_of(prefix +
                      "  - [-1, 1, Conv, [64, 3, 2]]\n  - [-1, 1, Conv, [64, 3, 2]]\n"
                      "  - [[0, 1], 1, Concat, [1]]\n" +
                      ok_head),
             Catch::Contains("Concat inputs have different strides (2, 4)"));
  CHECK_THAT(error_of("nc: 4\nscales:\n  n: [0.5, 0.25, 1024]\nhead: []\n"),
             Catch::Contains("missing 'backbone'"));
  CHECK_THAT(error_of("nc: [4\n"), Catch::Contains("invalid YAML at line"));
  BuildOptions options;
  options.arch = dir.file("net.yaml");
  options.scale = "q";
  test::write_text(dir.file("net.yaml"), prefix + ok_rows + ok_head);
  CHECK_THROWS_WITH(build_network(options), Catch::Contains("has no scale 'q' (choose n)"));
  options.arch = "models/no-such-model.yaml";
  options.scale = "";
  CHECK_THROWS_WITH(build_network(options), Catch::Contains("not found; available:") &&
                                                Catch::Contains("models/yolo26.yaml"));
}

TEST_CASE("model options pick architecture scale classes keypoints and weights", "[unit][model]") {
  config::ModelOptions options;
  options.arch = "models/yolo11.yaml";
  options.scale = "n";
  CHECK(make_model(options)->arch().nc == 80);    // the YAML's
  CHECK(make_model(options, 5)->arch().nc == 5);  // the data set's
  options.nc = 3;
  CHECK(make_model(options, 5)->arch().nc == 3);  // model.nc wins
  options.arch = "yolo26s";                       // a scale in the name wins over model.scale
  CHECK(make_model(options)->arch().name() == "yolo26s");
  options.arch = "models/yolo26-pose.yaml";
  auto pose = make_model(options, 0, std::array<int64_t, 2>{5, 2});
  CHECK(pose->arch().kpt_shape == std::array<int64_t, 2>{5, 2});
  CHECK(pose->head()->named_parameters()["cv4_kpts.0.weight"].size(0) == 10);
  CHECK(pose->head()->named_parameters()["cv4_sigma.0.weight"].size(0) == 10);

  test::TempDir dir("model-weights");
  options.arch = "models/yolo26.yaml";
  auto source = make_model(options);
  save_weights(*source, dir.file("w.safetensors"));
  options.weights = dir.file("w.safetensors");
  auto loaded = make_model(options);
  const auto expected = source->named_parameters();
  for (const auto& item : loaded->named_parameters())
    CHECK(torch::equal(item.value(), expected[item.key()]));
  options.nc = 7;  // weights for 3 classes do not fit a 7-class head
  CHECK_THROWS_AS(make_model(options), ModelError);
}

TEST_CASE("RealNVP log density follows the affine couplings", "[unit][model]") {
  RealNVP flow;
  const auto x = torch::tensor({{0.3f, -1.2f}, {2.0f, 0.5f}, {0.0f, 0.0f}});  // [3, 2]
  // Default init: xavier-uniform with gain 0.01, so every weight is tiny.
  for (const auto& item : flow->named_parameters()) {
    if (item.key().find("weight") != std::string::npos)
      CHECK(item.value().abs().max().item<float>() < 0.01f * std::sqrt(6.0f / 66.0f) + 1e-7f);
  }
  // Zero weights: each scale net outputs tanh(a) and each shift net d (their last biases), so
  // every coupling maps its free coordinate to (z - d) * exp(-tanh(a)); hand-derived density
  // with loc (0.5, -0.25) and cov diag(4, 1).
  const double a[2] = {0.7, -0.4}, d[2] = {0.2, -0.3};
  {
    torch::NoGradGuard no_grad;
    for (const auto& item : flow->named_parameters()) item.value().zero_();
    for (int i = 0; i < 6; ++i) {
      const auto params = flow->named_parameters();
      params["s." + std::to_string(i) + ".4.bias"].copy_(torch::tensor({a[0], a[1]}));
      params["t." + std::to_string(i) + ".4.bias"].copy_(torch::tensor({d[0], d[1]}));
    }
    flow->loc.copy_(torch::tensor({0.5f, -0.25f}));
    flow->cov.copy_(torch::tensor({{4.f, 0.f}, {0.f, 1.f}}));
  }
  const auto log_p = flow->log_prob(x);  // [3]
  for (int64_t n = 0; n < 3; ++n) {
    double z[2] = {x[n][0].item<double>(), x[n][1].item<double>()};
    double log_det = 0;
    for (int i = 5; i >= 0; --i) {
      const int free = i % 2 == 0 ? 0 : 1;  // masks alternate [0, 1], [1, 0]
      z[free] = (z[free] - d[free]) * std::exp(-std::tanh(a[free]));
      log_det -= std::tanh(a[free]);
    }
    const double dz0 = z[0] - 0.5, dz1 = z[1] + 0.25;
    const double expected =
        -std::log(2 * M_PI) - 0.5 * std::log(4.0) - 0.5 * (dz0 * dz0 / 4 + dz1 * dz1) + log_det;
    CHECK(log_p[n].item<double>() == Approx(expected).epsilon(1e-5));  // fp32 arithmetic
  }
}
