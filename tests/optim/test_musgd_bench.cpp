// `detrain bench optim` as a user runs it: the JSON names the three optimizers with their timings,
// Newton-Schulz kernels and operator counts and the exact-vs-off difference; --ns-kernel adds
// one row per kernel; a CUDA device is refused without CUDA.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "compat/torch_compat.h"
#include "test_support.h"

using detrain::test::run_detrain;

TEST_CASE("detrain bench optim --json reports SGD, MuSGD off and exact", "[smoke][musgd]") {
  const auto r = run_detrain(
      "bench optim --model models/yolo26.yaml --scale n --steps 1 --json runtime.threads=1 "
      "optim.ns_dtype=fp32");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  // reference-yolo.md section 7: yolo26n has 126 Muon matrices in 42 keys.
  CHECK(j["muon_matrices"] == 126);
  CHECK(j["keys"] == 42);
  REQUIRE(j["optimizers"].size() == 3);
  CHECK(j["optimizers"][0]["name"] == "sgd");
  CHECK(j["optimizers"][2]["name"] == "musgd exact");
  for (const auto& row : j["optimizers"]) {
    CHECK(row["median_ms"].get<double>() > 0);
    CHECK(row["op_calls_per_step"].get<int64_t>() > 0);
  }
  // Stacks issue fewer operator calls than the per-parameter loop.
  CHECK(j["optimizers"][2]["op_calls_per_step"].get<int64_t>() <
        j["optimizers"][1]["op_calls_per_step"].get<int64_t>());
  // Three fp32 steps: only reduction order differs (the 35-step bound is 1e-5).
  CHECK(j["exact_vs_off_max_abs_param_diff"].get<double>() <= 1e-5);
  // fp32 under auto takes the emulated (fp32 workspace) kernel; the rows say so.
  CHECK(j["ns_kernel"] == "emulated");
  CHECK(j["optimizers"][0]["ns_kernel"] == "-");
  CHECK(j["optimizers"][2]["ns_kernel"] == "emulated");
}

TEST_CASE("detrain bench optim --ns-kernel times each kernel in its own row", "[smoke][musgd]") {
  const auto r = run_detrain(
      "bench optim --model models/yolo26.yaml --scale n --steps 1 --json --ns-kernel "
      "emulated,native runtime.threads=1");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j["ns_dtype"] == "bf16");
  REQUIRE(j["optimizers"].size() == 4);
  CHECK(j["optimizers"][1]["name"] == "musgd off");
  CHECK(j["optimizers"][1]["ns_kernel"] == "emulated");  // off takes the first kernel
  CHECK(j["optimizers"][2]["name"] == "musgd exact emulated");
  CHECK(j["optimizers"][2]["ns_kernel"] == "emulated");
  CHECK(j["optimizers"][3]["name"] == "musgd exact native");
  CHECK(j["optimizers"][3]["ns_kernel"] == "native");
  for (const auto& row : j["optimizers"]) CHECK(row["median_ms"].get<double>() > 0);
}

TEST_CASE("detrain bench optim --ns-kernel refuses an unknown kernel", "[smoke][musgd]") {
  const auto r = run_detrain("bench optim --steps 1 --ns-kernel fast");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("--ns-kernel"));
}

TEST_CASE("detrain bench optim --device cuda is refused without CUDA", "[smoke][musgd]") {
  if (detrain::compat::cuda_available()) return;  // the refusal only exists without CUDA
  const auto r = run_detrain("bench optim --steps 1 --device cuda");
  INFO(r.output);
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.output, Catch::Contains("CUDA is not available"));
}
