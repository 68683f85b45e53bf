// `detrain model` as a user runs it: the layer table and totals, the census, JSON output,
// fusion, loading weights, and exit code 6 with a one-line message for a bad model.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "test_support.h"

using detrain::test::run_detrain;

TEST_CASE("detrain model prints the layer table and totals and census", "[smoke][model]") {
  const auto r = run_detrain("model --model models/yolo26.yaml --scale n --census");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("C3k2         [384, 256, 1, True, 0.5, True]"));
  CHECK_THAT(r.output, Catch::Contains("Detect       [80, 1, True, [64, 128, 256]]"));
  // Reference yaml comment: "YOLO26n summary: 260 layers, 2,572,280 parameters, 6.1 GFLOPs".
  CHECK_THAT(r.output, Catch::Contains("yolo26n summary: 260 layers, 2,572,280 parameters, "
                                       "2,572,280 gradients, 6.1 GFLOPs"));
  CHECK_THAT(r.output, Catch::Contains("8400 anchors at 640 px"));
  CHECK_THAT(r.output,
             Catch::Contains("126 matrices · 41 distinct shapes · 42 (group, shape) keys"));
}

TEST_CASE("detrain model --json describes the model and its census", "[smoke][model]") {
  const auto r = run_detrain("model -m yolo11n-pose --nc 1 --imgsz 320 --census --json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j["model"] == "yolo11n-pose");
  CHECK(j["nc"] == 1);
  CHECK(j["kpt_shape"] == nlohmann::json::array({17, 3}));
  CHECK(j["totals"]["parameters"] == 2874462);  // reference-yolo.md 1.5, nc=1
  CHECK(j["anchors"] == 2100);                  // 40^2 + 20^2 + 10^2 at 320 px
  CHECK(j["layers"].size() == 24);
  CHECK(j["census"]["matrices"] == 96);  // reference-yolo.md 7
  CHECK(j["census"]["frozen_matrices"] == 1);
  CHECK(j["census"]["keys"] == 42);
  CHECK(j["outputs"]["eval"]["decoded"] == nlohmann::json::array({"B", 56, 2100}));
}

TEST_CASE("detrain model --fuse reports the inference model", "[smoke][model]") {
  const auto r = run_detrain("model -m models/yolo26-pose.yaml --scale n --nc 1 --fuse --json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j["fused"] == true);
  CHECK(j["totals"]["gflops_graph"] == "inference");
  CHECK(j["totals"]["parameters"].get<int64_t>() < 3679464);
  CHECK(j["outputs"]["eval"]["detections"] == nlohmann::json::array({"B", 300, 57}));
}

TEST_CASE("detrain model fails with exit code 6 on a bad model or weights", "[smoke][model]") {
  auto r = run_detrain("model -m models/nope.yaml");
  CHECK(r.exit_code == 6);
  CHECK_THAT(r.output, Catch::Contains("detrain: error: model 'models/nope.yaml' not found"));
  const std::string golden = detrain::test::golden("yolo11n_weights.safetensors");
  r = run_detrain("model -m yolo26n --weights " + golden);
  CHECK(r.exit_code == 6);
  CHECK_THAT(r.output, Catch::Contains("does not match the model"));
  r = run_detrain("model -m yolo11n --weights " + golden);
  CHECK(r.exit_code == 0);
}
