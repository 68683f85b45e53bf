// safetensors reader/writer and strict state-dict loading: round trips of every supported
// dtype (0-d included), the golden files' layout, and one clear error per kind of bad file.
#include <catch2/catch.hpp>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "model/safetensors.h"
#include "model/state_dict.h"
#include "model/yolo_model.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::model;

namespace {

// A file from a raw header text and data bytes.
std::string raw_file(const std::string& header, const std::string& data) {
  std::string bytes(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(bytes.data(), &n, 8);
  return bytes + header + data;
}

std::string error_of(const std::string& path) {
  try {
    read_safetensors(path);
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("safetensors round trip keeps dtypes shapes values order and metadata", "[unit][model]") {
  test::TempDir dir("safetensors");
  const std::vector<std::pair<std::string, torch::Tensor>> tensors{
      {"z.f32", torch::randn({2, 3})},
      {"a.f64", torch::randn({4}, torch::kFloat64)},
      {"m.i64", torch::tensor(int64_t{7})},  // 0-d, like num_batches_tracked
      {"u8", torch::arange(10, torch::kUInt8).view({2, 5})},
      {"flags", torch::tensor({true, false, true})},
      {"half", torch::randn({3}).to(torch::kFloat16)},
      {"bf16", torch::randn({2, 2}).to(torch::kBFloat16)},
      {"i32", torch::tensor({1, -2, 3}, torch::kInt32)},
      {"empty", torch::zeros({0, 4})},
      {"strided", torch::randn({4, 6}).t()}};  // non-contiguous input
  write_safetensors(dir.file("t.safetensors"), tensors, {{"note", "x"}, {"json", "[1, 2]"}});
  const auto file = read_safetensors(dir.file("t.safetensors"));
  REQUIRE(file.tensors.size() == tensors.size());
  std::vector<std::string> names;
  for (const auto& [name, t] : tensors) {
    INFO(name);
    names.push_back(name);
    const auto& back = file.at(name);
    CHECK(back.scalar_type() == t.scalar_type());
    CHECK(back.sizes() == t.sizes());
    CHECK(torch::equal(back, t.contiguous()));
  }
  CHECK(file.order == names);  // header order, not sorted
  CHECK(file.at("m.i64").dim() == 0);
  CHECK(file.metadata.at("note") == "x");
  CHECK(file.metadata.at("json") == "[1, 2]");
  CHECK_THROWS_WITH(file.at("nope"), Catch::Contains("no tensor named 'nope'"));
}

TEST_CASE("golden weight files read with 0-d counters and their metadata", "[unit][model]") {
  const std::string path = test::golden("yolo26n_weights.safetensors");
  const auto file = read_safetensors(path);
  CHECK(file.tensors.size() == 708);  // golden README table: n_tensors
  const auto& counter = file.at("model.0.bn.num_batches_tracked");
  CHECK(counter.dim() == 0);
  CHECK(counter.scalar_type() == torch::kInt64);
  CHECK(file.at("model.0.conv.weight").sizes() == torch::IntArrayRef({16, 3, 3, 3}));
  CHECK(file.metadata.at("n_params") == "2572280");
  const auto order = nlohmann::json::parse(file.metadata.at("state_dict_order"));
  CHECK(file.order == order.get<std::vector<std::string>>());
}

TEST_CASE("bad safetensors files fail with a message naming the file and the problem",
          "[unit][model]") {
  test::TempDir dir("safetensors-bad");
  auto write = [&](const std::string& name, const std::string& bytes) {
    test::write_text(dir.file(name), bytes);
    return dir.file(name);
  };
  const std::string four_floats(16, '\0');
  const std::string good = R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  CHECK(error_of(write("good", raw_file(good, four_floats))).empty());

  CHECK_THAT(error_of(write("short", "abc")),
             Catch::Contains("short") && Catch::Contains("8-byte header length"));
  CHECK_THAT(error_of(write("long", raw_file(good, four_floats).substr(0, 20))),
             Catch::Contains("exceeds the file"));
  CHECK_THAT(error_of(write("json", raw_file("{not json}", ""))), Catch::Contains("not JSON"));
  CHECK_THAT(
      error_of(write("dtype", raw_file(R"({"a":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})",
                                       std::string(8, '\0')))),
      Catch::Contains("tensor 'a' has unsupported dtype C64"));
  CHECK_THAT(
      error_of(write("size", raw_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})",
                                      four_floats))),
      Catch::Contains("tensor 'a' spans 16 bytes but its shape and dtype need 12"));
  CHECK_THAT(error_of(write("overlap",
                            raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                     R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                     std::string(12, '\0')))),
             Catch::Contains("tensor 'b' starts at byte 4, expected 8"));
  CHECK_THAT(error_of(write("trailing", raw_file(good, four_floats + "xx"))),
             Catch::Contains("covers 16 bytes but the file has 18"));
  CHECK_THAT(error_of(write("entry", raw_file(R"({"a":{"dtype":"F32","shape":[2]}})", ""))),
             Catch::Contains("tensor 'a' has a malformed entry"));
  CHECK_THAT(error_of(write("meta", raw_file(R"({"__metadata__":{"k":1}})", ""))),
             Catch::Contains("__metadata__ value 'k' is not a string"));
  CHECK_THROWS_AS(read_safetensors(dir.file("missing")), IoError);
}

TEST_CASE("strict state-dict loading lists every mismatch in one error", "[unit][model]") {
  BuildOptions options;
  options.arch = "models/yolo26.yaml";
  options.scale = "n";
  YoloModel model(options);
  auto entries = state_dict(*model);
  std::map<std::string, torch::Tensor> tensors(entries.begin(), entries.end());
  CHECK(tensors.count("model.0.bn.running_var"));
  CHECK(tensors.count("model.0.bn.num_batches_tracked"));

  // A round trip through a file restores parameters and buffers exactly.
  test::TempDir dir("state-dict");
  {
    torch::NoGradGuard no_grad;
    tensors.at("model.0.bn.running_var").fill_(3.0);
    tensors.at("model.0.bn.num_batches_tracked").fill_(5);
  }
  save_weights(*model, dir.file("w.safetensors"));
  YoloModel fresh(options);
  load_weights(*fresh, dir.file("w.safetensors"));
  for (const auto& [name, t] : state_dict(*fresh)) {
    INFO(name);
    CHECK(torch::equal(t, tensors.at(name)));
  }

  auto broken = tensors;
  broken.erase("model.0.conv.weight");
  broken.erase("model.23.one2one_cv3.2.2.bias");
  broken["model.99.extra"] = torch::zeros({1});
  broken["model.1.bn.weight"] = torch::zeros({5});
  try {
    load_state_dict(*fresh, broken, "file.safetensors");
    FAIL("expected a ModelError");
  } catch (const ModelError& e) {
    const std::string message = e.what();
    CHECK_THAT(message, Catch::Contains("file.safetensors does not match the model"));
    CHECK_THAT(message, Catch::Contains("2 missing (model.0.conv.weight, "
                                        "model.23.one2one_cv3.2.2.bias)"));
    CHECK_THAT(message, Catch::Contains("1 unexpected (model.99.extra)"));
    CHECK_THAT(message, Catch::Contains("model.1.bn.weight file [5] vs model [32]"));
  }
}
