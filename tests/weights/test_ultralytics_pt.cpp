// Ultralytics .pt files read in C++ (weights/ultralytics_pt.h), against the reference's own
// reading of the same files: the fixtures of tests/golden/pt_fixtures.py (ultralytics 8.4.190:
// Model.save of random models, last.pt / best.pt after one training epoch on a YOLO copy of
// coco-mini) with torch.load's state_dict and raw head outputs beside each. Then the bad files:
// another program's pickle, a torchvision model, a bare state dict, a truncated archive, and a
// fuzz pass over the pickle bytes.
#include <caffe2/serialize/inline_container.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "common/errors.h"
#include "model/safetensors.h"
#include "model/state_dict.h"
#include "model/tensor_checks.h"
#include "test_support.h"
#include "weights/pickle.h"
#include "weights/ultralytics_model.h"
#include "weights/ultralytics_pt.h"

using namespace detrain;
namespace fs = std::filesystem;

namespace {

// Raw head outputs in eval mode: the same fp32 convolutions as the model parity tests
// (tests/model/test_model_parity.cpp kTrainRel: measured <= 1.5e-5 x max|ref|; 1e-4 leaves
// room for other kernels).
constexpr double kRawRel = 1e-4;

nlohmann::json manifest() {
  std::ifstream in(test::golden("pt/MANIFEST.json"));
  return nlohmann::json::parse(in);
}

config::ModelOptions no_options() { return config::ModelOptions{}; }

// `pt` (read from `path`) against the reference's reading beside it: every tensor bit-identical
// to torch.load's, and the model built from the file's own architecture computing the raw head
// outputs the reference computes. Returns the model options the file gave.
config::ModelOptions check_reads_as_reference(const weights::UltralyticsModelFile& pt,
                                              const std::string& path) {
  // Every tensor bit-identical to torch.load's (fp16 -> fp32 is exact).
  const model::SafetensorsFile ref = model::read_safetensors(path + ".state.safetensors");
  REQUIRE(pt.state.size() == ref.tensors.size());
  for (const auto& [name, tensor] : pt.state) {
    INFO(name);
    const auto it = ref.tensors.find(name);
    REQUIRE(it != ref.tensors.end());
    REQUIRE(tensor.sizes() == it->second.sizes());
    CHECK(torch::equal(tensor, it->second.to(tensor.scalar_type())));
  }

  // The architecture the file records builds the network its tensors fill, and it computes
  // what the reference computes.
  const config::ModelOptions options = weights::pt_model_options(pt, no_options(), false);
  model::YoloModel m = weights::model_from_pt(pt, options);
  m->eval();
  // ... in state_dict() order (the safetensors header is sorted; detrain's order is Python's).
  const auto ours = model::state_dict(*m);
  REQUIRE(ours.size() == pt.state.size());
  for (size_t i = 0; i < ours.size(); ++i) REQUIRE(ours[i].first == pt.state[i].first);
  const model::SafetensorsFile fwd = model::read_safetensors(path + ".forward.safetensors");
  torch::NoGradGuard no_grad;
  const model::TrainOutput out = m->forward_train(fwd.tensors.at("input"));
  auto compare = [&](const std::string& branch, const model::BranchOutput& b) {
    const std::pair<const char*, torch::Tensor> parts[] = {
        {"boxes", b.boxes}, {"scores", b.scores}, {"kpts", b.kpts}, {"kpts_sigma", b.kpts_sigma}};
    for (const auto& [key, ours] : parts) {
      const auto it = fwd.tensors.find(branch + "." + key);
      if (it == fwd.tensors.end()) continue;
      REQUIRE(ours.defined());
      const auto report = test::check_close(branch + "." + key, ours, it->second, kRawRel);
      INFO(report.details);
      CHECK(report.ok);
    }
  };
  compare("one2many", out.one2many);
  if (fwd.tensors.count("one2one.scores")) compare("one2one", out.one2one);
  return options;
}

}  // namespace

TEST_CASE("every Ultralytics .pt fixture reads as the reference reads it",
          "[parity][weights][pt]") {
  const nlohmann::json files = manifest();
  REQUIRE(files.size() >= 21);  // 7 random + 6 x (last, best) + 2 epoch.pt
  for (const auto& [file, info] : files.items()) {
    INFO(file);
    const std::string path = test::golden("pt/" + file);
    const weights::UltralyticsModelFile pt = weights::read_ultralytics_pt(path);
    CHECK(pt.task == info["task"].get<std::string>());
    CHECK(pt.nc == info["nc"].get<int64_t>());
    CHECK(pt.names == info["names"].get<std::vector<std::string>>());
    CHECK(pt.scale == info["scale"].get<std::string>());
    // A finished run strips both last.pt and best.pt (model = the EMA, ema None), as Model.save
    // writes model: their weights are `model`. An epoch's save (epoch.pt: a run in progress)
    // writes model None and the EMA: those come from `ema`, with the epoch recorded.
    const bool in_progress = file.find("epoch.pt") != std::string::npos;
    CHECK(pt.weights_of == (in_progress ? "ema" : "model"));
    if (in_progress) CHECK(pt.epoch == 0);
    CHECK(pt.dtype == "float16");
    if (file.find("trained") != std::string::npos) CHECK(pt.version == "8.4.190");

    check_reads_as_reference(pt, path);
  }
}

TEST_CASE("an explicit model.arch must build the file's network", "[unit][weights][pt]") {
  const weights::UltralyticsModelFile pt =
      weights::read_ultralytics_pt(test::golden("pt/yolo11n-random.pt"));
  config::ModelOptions given;
  given.arch = "models/yolo26.yaml";
  const config::ModelOptions o = weights::pt_model_options(pt, given, true);
  try {
    weights::model_from_pt(pt, o);
    FAIL("a yolo11n file loaded into yolo26n");
  } catch (const ModelError& e) {
    const std::string what = e.what();
    CHECK(what.find("yolo11n") != std::string::npos);
    CHECK(what.find("models/yolo26.yaml") != std::string::npos);
  }
  const config::ModelOptions adopted = weights::pt_model_options(pt, config::ModelOptions{}, false);
  CHECK(adopted.arch == "models/yolo11.yaml");
  CHECK(adopted.scale == "n");
  CHECK(weights::pt_cls_width(pt) == 80);  // max(64, min(80, 100)) at yolo11n
}

TEST_CASE("bad .pt files get one clear error each", "[unit][weights][pt]") {
  auto error_of = [](const std::string& file) -> std::string {
    try {
      weights::read_ultralytics_pt(test::golden("pt/" + file));
    } catch (const ModelError& e) {
      return e.what();
    }
    return "no error";
  };
  CHECK_THAT(error_of("bad-unknown-class.pt"),
             Catch::Contains("__main__.NotAModel") && Catch::Contains("not an Ultralytics model"));
  CHECK_THAT(error_of("bad-torchvision.pt"),
             Catch::Contains("torchvision.models.resnet.ResNet") && Catch::Contains("torchvision"));
  CHECK_THAT(error_of("bad-state-dict.pt"), Catch::Contains("has no 'model' key"));
  CHECK_THAT(error_of("bad-truncated.pt"), Catch::Contains("truncated or corrupt"));
  CHECK_THROWS_AS(weights::read_ultralytics_pt("/nonexistent/best.pt"), IoError);
}

TEST_CASE("the pickle reader survives arbitrary bytes", "[unit][weights][pt][fuzz]") {
  caffe2::serialize::PyTorchStreamReader archive(test::golden("pt/yolo26n-pose-random.pt"));
  auto [data, size] = archive.getRecord("data.pkl");
  const std::string good(static_cast<const char*>(data.get()), size);
  const auto allow_all = [](const std::string&, const std::string&) { return true; };
  REQUIRE(weights::read_pickle(good, allow_all).root != nullptr);
  std::mt19937 rng(2026);
  int parsed = 0, refused = 0;
  for (int round = 0; round < 300; ++round) {
    std::string bytes = good;
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % bytes.size();
      switch (rng() % 3) {
        case 0:
          bytes[at] = static_cast<char>(rng());
          break;
        case 1:
          bytes.erase(at, 1 + rng() % 64);
          break;
        default:
          bytes.resize(at);
          break;
      }
      if (bytes.empty()) bytes = "\x80";
    }
    try {
      weights::read_pickle(bytes, allow_all);
      ++parsed;
    } catch (const weights::PickleError&) {
      ++refused;
    }
  }
  for (int round = 0; round < 2000; ++round) {  // short random streams: every opcode path
    std::string bytes(1 + rng() % 48, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    try {
      weights::read_pickle(bytes, allow_all);
      ++parsed;
    } catch (const weights::PickleError&) {
      ++refused;
    }
  }
  CHECK(parsed + refused == 2300);
  CHECK(refused > 0);
}

// ---- the corpus of every 8.x release (tests/golden/pt_corpus.py) ------------------------------

namespace {

nlohmann::json corpus() {
  std::ifstream in(test::golden("pt-corpus/MANIFEST.json"));
  return nlohmann::json::parse(in);
}

std::string corpus_root() {
  return fs::path(test::golden("pt-corpus/MANIFEST.json")).parent_path().string();
}

}  // namespace

TEST_CASE("every release's .pt reads and builds as 8.4.190 reads it",
          "[parity][weights][pt][corpus]") {
  const nlohmann::json m = corpus();
  const auto& files = m["files"];
  std::set<std::string> releases, kinds;
  size_t getattr_files = 0;
  for (const auto& [file, info] : files.items()) {
    INFO(file);
    const std::string path = corpus_root() + "/" + file;
    const weights::UltralyticsModelFile pt = weights::read_ultralytics_pt(path);
    CHECK(pt.task == info["task"].get<std::string>());
    CHECK(pt.nc == info["nc"].get<int64_t>());
    CHECK(pt.names == info["names"].get<std::vector<std::string>>());
    if (file.find("random") == std::string::npos)
      CHECK(pt.version == info["release"].get<std::string>());
    const config::ModelOptions o = check_reads_as_reference(pt, path);
    // An official build maps to the shipped YAML its yaml_file names (the same network); a
    // custom one is built from the file's own yaml dict, written out for the builder.
    const bool custom = info["custom_yaml"].get<bool>();
    CHECK((o.arch.rfind("models/", 0) == 0) == !custom);
    if (custom) CHECK_THAT(o.arch, Catch::Contains("custom"));
    releases.insert(info["release"].get<std::string>());
    kinds.insert(info["task"].get<std::string>() + (custom ? " custom" : " official"));
    getattr_files += info["getattr"].get<bool>();
  }
  CHECK(files.size() >= 20);
  CHECK(releases.size() >= 5);  // 8.0, 8.1, 8.2, 8.3, 8.4
  CHECK(kinds.size() == 4);     // detect and pose, official and custom YAMLs
  CHECK(getattr_files >= 1);    // 8.0's and 8.1's Pose heads pickle getattr(Detect, 'forward')
}

TEST_CASE("every release's .pt opens with no flags in model, val, export and train",
          "[weights][pt][corpus][slow]") {
  const nlohmann::json m = corpus();
  const std::string data = corpus_root() + "/data/";
  size_t opened = 0;
  for (const auto& [file, info] : m["files"].items()) {
    INFO(file);
    const std::string path = corpus_root() + "/" + file;
    const std::string dataset = data + info["task"].get<std::string>() + ".yaml";
    test::TempDir dir;
    auto run = test::run_detrain("model -w '" + path + "'");
    INFO(run.output);
    CHECK(run.exit_code == 0);
    run = test::run_detrain("val -w '" + path + "' -d '" + dataset + "' data.imgsz=64");
    INFO(run.output);
    // pt_corpus.py's data sets: COCO's 80 names (detect), person (pose). A random pose model
    // saved from its YAML predicts 80 classes: validating it on 1 is refused naming both.
    const int64_t data_nc = info["task"] == "pose" ? 1 : 80;
    if (info["nc"].get<int64_t>() == data_nc) {
      CHECK(run.exit_code == 0);
    } else {
      CHECK(run.exit_code == 6);
      CHECK(run.output.find("validate on the data set it was trained for") != std::string::npos);
    }
    run = test::run_detrain("export -w '" + path + "' -o '" + dir.file("m.onnx") + "'");
    INFO(run.output);
    CHECK(run.exit_code == 0);
    CHECK(fs::exists(dir.file("m.onnx")));
    run = test::run_detrain("train model='" + path + "' data.dataset='" + dataset +
                            "' data.imgsz=64 data.batch=4 data.workers=0 train.epochs=1 "
                            "train.warmup_epochs=0 train.precision=fp32 train.progress=off "
                            "train.plots=false runtime.threads=1 train.project='" +
                            dir.file("runs") + "' train.name=t --max-iterations 1");
    INFO(run.output);
    // 0 when the one iteration is the whole epoch (the run finished), else 130: --max-iterations
    // stopped it as Ctrl-C does, with a resumable checkpoint.
    CHECK((run.exit_code == 0 || run.exit_code == 130));
    CHECK(fs::exists(dir.file("runs/t/weights/last.ckpt")));
    ++opened;
  }
  CHECK(opened >= 20);
}

TEST_CASE("a pickled getattr(<class>, <name>) is an inert value", "[unit][weights][pickle]") {
  // What protocol 2 writes for a function nested in a class (the Pose head of 8.0 to 8.2 keeps
  // `detect = Detect.forward`): GLOBAL builtins.getattr, GLOBAL the class, the name, TUPLE2,
  // REDUCE, inside {'detect': ...}.
  using namespace std::string_literals;
  // (Each length ends its literal: a hex escape would swallow the hex digits that follow.)
  const std::string stream = "\x80\x02}q\x00X\x06\x00\x00\x00"s + "detectq\x01" +
                             "c__builtin__\ngetattr\nq\x02" +
                             "cultralytics.nn.modules.head\nDetect\nq\x03" + "X\x07\x00\x00\x00"s +
                             "forwardq\x04\x86q\x05Rq\x06s.";
  std::vector<std::string> named;
  const auto record = [&](const std::string& module, const std::string& name) {
    named.push_back(module + "." + name);
    return true;
  };
  const weights::Pickle p = weights::read_pickle(stream, record);
  CHECK((named ==
         std::vector<std::string>{"builtins.getattr", "ultralytics.nn.modules.head.Detect"}));
  const weights::Value* detect = p.root->get("detect");
  REQUIRE(detect != nullptr);
  CHECK(detect->class_name() == "builtins.getattr");
  REQUIRE(detect->items.size() == 2);
  CHECK(detect->items[0]->s == "ultralytics.nn.modules.head.Detect");
  CHECK(detect->items[1]->s == "forward");
  // The .pt filter accepts getattr only as a name: the class it is applied to passes the same
  // filter as any other global, so getattr(os, 'system') still stops at "os".
  CHECK(weights::ultralytics_global_allowed("builtins", "getattr"));
  CHECK_FALSE(weights::ultralytics_global_allowed("os", "system"));
  CHECK_FALSE(weights::ultralytics_global_allowed("builtins", "eval"));
}

TEST_CASE("nc comes from the head's tensors, not a stale yaml nc", "[unit][weights][pt]") {
  std::vector<std::pair<std::string, torch::Tensor>> state{
      {"model.22.cv3.0.0.conv.weight", torch::zeros({64, 64, 3, 3})},
      {"model.22.cv3.0.2.weight", torch::zeros({1, 64, 1, 1})},
      {"model.22.one2one_cv3.0.2.weight", torch::zeros({1, 64, 1, 1})},
      {"model.22.cv3.1.2.weight", torch::zeros({1, 64, 1, 1})}};
  CHECK(weights::head_class_count(state) == 1);
  state.erase(state.begin() + 1);                // cv3.0's last conv gone: its end-to-end
  CHECK(weights::head_class_count(state) == 1);  // twin one2one_cv3.0 says the same
  state.erase(state.begin() + 1);                // both gone: cv3.1 (another level) is not read
  CHECK(weights::head_class_count(state) == 0);
  CHECK(weights::head_class_count(std::map<std::string, torch::Tensor>{}) == 0);
}
