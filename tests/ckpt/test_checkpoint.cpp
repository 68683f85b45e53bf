// Checkpoints: full round trip of every field, architecture check, and clean one-line errors
// for a missing, foreign, truncated or corrupted file; a failed write keeps the previous file.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "ckpt/checkpoint.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::ckpt;
using detrain::test::TempDir;

namespace {

// The Error message a call throws ("" for none).
constexpr auto error_of = &test::thrown_message<Error>;

Checkpoint sample_checkpoint() {
  torch::manual_seed(7);
  Checkpoint c;
  c.arch = {"models/yolo26.yaml", content_hash("arch text"), "n", 80, {17, 3}};
  c.model = {{"model.0.conv.weight", torch::randn({4, 3, 3, 3})},
             {"model.0.bn.running_mean", torch::randn({4})},
             {"model.0.bn.num_batches_tracked", torch::tensor(12, torch::kLong)}};
  c.ema = {{"model.0.conv.weight", torch::randn({4, 3, 3, 3})}};
  c.optimizer.kind = "musgd";
  c.optimizer.tensors = {{"model.0.conv.weight/momentum_buffer", torch::randn({4, 3, 3, 3})},
                         {"model.0.conv.weight/momentum_buffer_sgd", torch::randn({4, 3, 3, 3})},
                         {"bf16 state", torch::randn({5}).to(torch::kBFloat16)}};
  c.optimizer.scalars = {{"group0/lr", 0.01}, {"group0/momentum", 0.937}};
  c.position = {3, 17, 40, 123, 5 * 40 + 16, 123, 2, false};
  Rng rng(42, {1, 2});
  rng.next_u64();
  c.rng_streams["loader"] = rng.state();
  c.rng_streams["augment"] = Rng(9).state();
  c.generator_states = capture_torch_generators();
  c.loader_position = {{"epoch", 3}, {"next_batch", 17}, {"seed", -5}};
  c.config_yaml = "train:\n  epochs: 10\n";
  c.config_hash = "0123456789abcdef";
  c.metrics_json = R"([{"epoch":1,"fitness":0.25}])";
  c.best_fitness = 0.25;
  c.best_epoch = 1;
  c.extra_tensors = {{"grad/model.0.conv.weight", torch::randn({4, 3, 3, 3})}};
  c.extra_scalars = {{"tloss/box", 1.5}, {"nan", std::nan("")}};
  return c;
}

void check_same(const NamedTensors& a, const NamedTensors& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].first == b[i].first);
    CHECK(a[i].second.scalar_type() == b[i].second.scalar_type());
    CHECK(torch::equal(a[i].second, b[i].second));
  }
}

}  // namespace

TEST_CASE("checkpoint round trip keeps every field exactly", "[unit][train]") {
  TempDir dir;
  const Checkpoint c = sample_checkpoint();
  const std::string path = dir.file("last.ckpt");
  save_checkpoint(path, c);
  const Checkpoint r = load_checkpoint(path);

  CHECK(r.arch == c.arch);
  CHECK(r.arch.arch_file == c.arch.arch_file);
  check_same(r.model, c.model);
  check_same(r.ema, c.ema);
  CHECK(r.optimizer.kind == "musgd");
  check_same(r.optimizer.tensors, c.optimizer.tensors);
  CHECK(r.optimizer.scalars == c.optimizer.scalars);
  CHECK(r.position.epoch == 3);
  CHECK(r.position.iter_in_epoch == 17);
  CHECK(r.position.batches_per_epoch == 40);
  CHECK(r.position.optimizer_steps == 123);
  CHECK(r.position.last_step_ni == 216);
  CHECK(r.position.ema_updates == 123);
  CHECK(r.position.bad_steps == 2);
  CHECK_FALSE(r.position.finished);
  const bool same_rng = r.rng_streams == c.rng_streams;  // std::array has no printer
  CHECK(same_rng);
  REQUIRE(r.generator_states.count("torch_cpu") == 1);
  CHECK(torch::equal(r.generator_states.at("torch_cpu"), c.generator_states.at("torch_cpu")));
  CHECK(r.loader_position == c.loader_position);
  CHECK(r.config_yaml == c.config_yaml);
  CHECK(r.config_hash == c.config_hash);
  CHECK(r.metrics_json == c.metrics_json);
  CHECK(r.best_fitness == 0.25);
  CHECK(r.best_epoch == 1);
  check_same(r.extra_tensors, c.extra_tensors);
  CHECK(r.extra_scalars.at("tloss/box") == 1.5);
  CHECK(std::isnan(r.extra_scalars.at("nan")));
  CHECK_FALSE(r.detrain_version.empty());
  CHECK(r.created_utc.size() == 20);  // 2024-01-02T03:04:05Z
}

TEST_CASE("checkpoint restores RNG streams and torch generators", "[unit][train]") {
  TempDir dir;
  Checkpoint c;
  Rng rng(5, {3});
  rng.next_u64();
  c.rng_streams["aug"] = rng.state();
  torch::manual_seed(11);
  c.generator_states = capture_torch_generators();
  const torch::Tensor expected_torch = torch::rand({3});  // [3] next draws after the capture
  const uint64_t expected_rng = rng.next_u64();
  save_checkpoint(dir.file("c.ckpt"), c);

  torch::manual_seed(999);  // disturb both
  const Checkpoint r = load_checkpoint(dir.file("c.ckpt"));
  restore_torch_generators(r.generator_states);
  CHECK(torch::equal(torch::rand({3}), expected_torch));
  Rng restored(0);
  restored.set_state(r.rng_streams.at("aug"));
  CHECK(restored.next_u64() == expected_rng);
}

TEST_CASE("checkpoint for another architecture is a clear ModelError", "[unit][train]") {
  TempDir dir;
  const Checkpoint c = sample_checkpoint();
  save_checkpoint(dir.file("last.ckpt"), c);
  const Checkpoint r = load_checkpoint(dir.file("last.ckpt"));
  CHECK_NOTHROW(check_architecture(r, c.arch, dir.file("last.ckpt")));
  ArchIdentity other = c.arch;
  other.scale = "s";
  CHECK_THROWS_AS(check_architecture(r, other, "x.ckpt"), ModelError);
  const std::string msg = error_of([&] { check_architecture(r, other, "x.ckpt"); });
  CHECK(msg.find("checkpoint x.ckpt was trained for models/yolo26.yaml (scale n, 80 classes, "
                 "keypoints [17, 3]") == 0);
  CHECK(msg.find("not for models/yolo26.yaml (scale s") != std::string::npos);
  CHECK(msg.find('\n') == std::string::npos);
  other = c.arch;
  other.kpt_shape = {};
  CHECK_THROWS_AS(check_architecture(r, other, "x.ckpt"), ModelError);
  other = c.arch;
  other.arch_hash = content_hash("other arch text");
  CHECK_THROWS_AS(check_architecture(r, other, "x.ckpt"), ModelError);
}

TEST_CASE("checkpoint loading rejects missing foreign truncated and corrupt files",
          "[unit][train]") {
  TempDir dir;
  CHECK_THROWS_AS(load_checkpoint(dir.file("none.ckpt")), IoError);
  CHECK(error_of([&] {
          load_checkpoint(dir.file("none.ckpt"));
        }).find("checkpoint " + dir.file("none.ckpt") + " not found") == 0);

  detrain::test::write_text(dir.file("text.ckpt"), "hello, not a checkpoint\n");
  CHECK_THROWS_AS(load_checkpoint(dir.file("text.ckpt")), ModelError);
  CHECK(error_of([&] {
          load_checkpoint(dir.file("text.ckpt"));
        }).find("is not a detrain checkpoint") != std::string::npos);

  // A LibTorch archive without detrain's header (e.g. torch::save of a tensor list).
  torch::save(std::vector<torch::Tensor>{torch::ones({2})}, dir.file("torch.pt"));
  CHECK(error_of([&] {
          load_checkpoint(dir.file("torch.pt"));
        }).find("is not a detrain checkpoint") != std::string::npos);

  save_checkpoint(dir.file("good.ckpt"), sample_checkpoint());
  const std::string bytes = read_file(dir.file("good.ckpt"));
  for (double keep : {0.99, 0.5, 0.1}) {
    const auto cut = static_cast<size_t>(static_cast<double>(bytes.size()) * keep);
    write_file_atomic(dir.file("cut.ckpt"), std::string_view(bytes).substr(0, cut));
    const std::string msg = error_of([&] { load_checkpoint(dir.file("cut.ckpt")); });
    INFO("kept " << keep);
    CHECK(msg.find("is truncated or corrupt") != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  }

  // Flip one byte inside the model tensor data (the zip layer does not check it).
  const torch::Tensor weight = sample_checkpoint().model[0].second;  // [4, 3, 3, 3]
  const std::string needle(static_cast<const char*>(weight.data_ptr()), 16);
  const size_t at = bytes.find(needle);
  REQUIRE(at != std::string::npos);
  std::string flipped = bytes;
  flipped[at + 3] = static_cast<char>(flipped[at + 3] ^ 0x40);
  write_file_atomic(dir.file("flip.ckpt"), flipped);
  CHECK(error_of([&] { load_checkpoint(dir.file("flip.ckpt")); }).find("checksum mismatch") !=
        std::string::npos);
}

TEST_CASE("a failing checkpoint write leaves the previous file intact", "[unit][train]") {
  TempDir dir;
  const std::string path = dir.file("last.ckpt");
  Checkpoint good = sample_checkpoint();
  save_checkpoint(path, good);
  const std::string before = read_file(path);

  Checkpoint bad = sample_checkpoint();
  bad.model.emplace_back("model.9.weight", torch::Tensor());  // undefined: fails mid-write
  CHECK_THROWS(save_checkpoint(path, bad));
  CHECK(read_file(path) == before);
  // No temporary file is left behind.
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    (void)entry;
    ++files;
  }
  CHECK(files == 1);

  // An unwritable target directory is an IoError and changes nothing.
  CHECK_THROWS_AS(save_checkpoint(dir.file("missing/dir/last.ckpt"), good), IoError);
  CHECK(load_checkpoint(path).position.optimizer_steps == good.position.optimizer_steps);
}
