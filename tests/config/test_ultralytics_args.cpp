// Ultralytics 8.4.190 command-line arguments as detrain overrides: the table against detrain's
// real keys, the value spellings, the errors, and docs/ultralytics-args.md against the table.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/paths.h"
#include "config/config.h"
#include "config/ultralytics_args.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::config;

namespace {

// The ConfigError message a call throws ("" for none).
constexpr auto error_of = &test::thrown_message<ConfigError>;

std::vector<std::string> tr(const std::vector<std::string>& args,
                            const std::string& command = "train") {
  const TranslatedArgs t = translate_ultralytics_args(args, command);
  REQUIRE(t.own.empty());  // what the command reads itself: see own() below
  return t.overrides;
}

// The arguments `detrain predict` reads itself (source=, save_txt=, ...).
std::map<std::string, std::string> own(const std::vector<std::string>& args) {
  const TranslatedArgs t = translate_ultralytics_args(args, "predict");
  REQUIRE(t.overrides.empty());
  return t.own;
}

std::string one(const std::string& arg, const std::string& command = "train") {
  const auto out = tr({arg}, command);
  REQUIRE(out.size() == 1);
  return out[0];
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

// Every key of ultralytics 8.4.190 cfg/default.yaml, checked by hand with this bash line
// from the repository root (one line; no output: the same 113 names in the same order):
//   diff <(python3 -c "import yaml; print('\n'.join(yaml.safe_load(open(
//   '/work/ref/u190/cfg/default.yaml'))))") <(grep -o '^    {"[a-z_0-9]*"'
//   src/config/ultralytics_args.cpp | tr -d ' {"')
// Here: the count and a handful of names.
TEST_CASE("the table holds every 8.4.190 argument once", "[unit][config][ultralytics_args]") {
  const auto table = ultralytics_arg_table();
  CHECK(table.size() == 113);
  std::set<std::string> names;
  for (const auto& row : table) names.insert(row.name);
  CHECK(names.size() == table.size());
  for (const char* name :
       {"task",   "mode",      "model",     "data",     "epochs", "batch",  "imgsz",
        "device", "optimizer", "lr0",       "cache",    "amp",    "conf",   "nms",
        "format", "erasing",   "cls_remap", "quantize", "dlam",   "tracker"})
    CHECK(names.count(name) == 1);
  CHECK(table.front().name == "task");
  CHECK(table.back().name == "tracker");
  for (const auto& row : table) {
    INFO(row.name);
    // Every row says what it does: a detrain key, the caller, or a reason.
    CHECK((!row.targets.empty() || row.caller_translates || !row.note.empty()));
    // An argument a command reads itself names the option it stands for there.
    CHECK(row.own_commands.empty() == row.own_option.empty());
  }
}

TEST_CASE("every detrain key of the table exists and takes the 8.4.190 default",
          "[unit][config][ultralytics_args]") {
  const std::vector<std::string> keys = all_keys();
  size_t mapped = 0;
  for (const auto& row : ultralytics_arg_table()) {
    if (row.targets.empty()) continue;
    ++mapped;
    for (const auto& [key, commands] : row.targets) {
      INFO(row.name << " -> " << key);
      CHECK(std::find(keys.begin(), keys.end(), key) != keys.end());
      REQUIRE_FALSE(commands.empty());
      for (const std::string& command : commands) {
        INFO("detrain " << command << " " << row.name << "=" << row.default_value);
        if (row.name == "device") {
          // None is "pick a device" in Ultralytics; detrain never guesses (see the next cases).
          CHECK(contains(error_of([&] { tr({"device=None"}, command); }), "name it"));
          continue;
        }
        std::vector<std::string> out;
        REQUIRE_NOTHROW(out = tr({row.name + "=" + row.default_value}, command));
        REQUIRE(out.size() == 1);
        CHECK(out[0].rfind(key + "=", 0) == 0);
        CHECK_NOTHROW(resolve("", out));
      }
    }
  }
  CHECK(mapped == 59);  // channels_last= maps to runtime.memory_format since it exists
}

TEST_CASE("the issue's command line translates", "[unit][config][ultralytics_args]") {
  const auto out = tr({"model=yolo26n.yaml", "data=coco8.yaml", "epochs=3", "imgsz=320", "batch=16",
                       "lr0=0.01", "optimizer=SGD", "device=0"});
  CHECK(out == std::vector<std::string>{"model=yolo26n.yaml", "data=coco8.yaml", "train.epochs=3",
                                        "data.imgsz=320", "data.batch=16", "optim.lr0=0.01",
                                        "optim.optimizer=sgd", "runtime.device=cuda:0"});
  // model and data are the caller's; the rest resolves as is.
  const auto r = resolve("", std::vector<std::string>(out.begin() + 2, out.end()));
  CHECK(r.experiment.train.epochs == 3);
  CHECK(r.experiment.data.imgsz == 320);
  CHECK(r.experiment.optim.optimizer == "sgd");
  CHECK(r.experiment.runtime.device == "cuda:0");
}

TEST_CASE("Ultralytics value spellings", "[unit][config][ultralytics_args]") {
  SECTION("optimizer, in any case Ultralytics accepts") {
    CHECK(one("optimizer=SGD") == "optim.optimizer=sgd");
    CHECK(one("optimizer=AdamW") == "optim.optimizer=adamw");
    CHECK(one("optimizer=adamw") == "optim.optimizer=adamw");
    CHECK(one("optimizer=MuSGD") == "optim.optimizer=musgd");
    CHECK(one("optimizer=auto") == "optim.optimizer=auto");
    const std::string adam = error_of([] { one("optimizer=Adam"); });
    CHECK(contains(adam, "`optimizer=Adam`"));
    CHECK(contains(adam, "SGD, MuSGD, AdamW and auto"));
    CHECK(contains(error_of([] { one("optimizer=RMSProp"); }), "SGD, MuSGD, AdamW and auto"));
    CHECK(contains(error_of([] { one("optimizer=lion"); }), "not an Ultralytics optimizer"));
  }
  SECTION("device") {
    CHECK(one("device=0") == "runtime.device=cuda:0");
    CHECK(one("device=1", "val") == "runtime.device=cuda:1");
    CHECK(one("device=cpu") == "runtime.device=cpu");
    CHECK(one("device=CPU", "predict") == "runtime.device=cpu");
    CHECK(one("device=cuda") == "runtime.device=cuda");
    CHECK(one("device=cuda:0") == "runtime.device=cuda:0");
    CHECK(one("device=[0]") == "runtime.device=cuda:0");
    // Several GPUs are several processes: the error gives the launcher's line.
    const std::string two = error_of([] { one("device=0,1"); });
    CHECK(contains(two, "`device=0,1`"));
    CHECK(contains(two, "--nproc 2 runtime.device=cuda"));
    CHECK_FALSE(contains(two, "CUDA_VISIBLE_DEVICES"));
    CHECK(contains(error_of([] { one("device=[2,3]"); }), "CUDA_VISIBLE_DEVICES=2,3"));
    CHECK(contains(error_of([] { one("device=0,1", "val"); }), "one device"));
    CHECK(contains(error_of([] { one("device=mps"); }), "MPS is not supported"));
    CHECK(contains(error_of([] { one("device=npu:0"); }), "NPU"));
    CHECK(contains(error_of([] { one("device=-1"); }), "idle GPU"));
    CHECK(contains(error_of([] { one("device=gpu"); }), "expected cpu, cuda"));
    CHECK(contains(error_of([] { one("device=0", "export"); }), "runs on the CPU"));
  }
  SECTION("booleans") {
    CHECK(one("cos_lr=True") == "train.cos_lr=true");
    CHECK(one("cos_lr=true") == "train.cos_lr=true");
    CHECK(one("cos_lr=False") == "train.cos_lr=false");
    CHECK(one("cos_lr=FALSE") == "train.cos_lr=false");
    CHECK(one("cos_lr") == "train.cos_lr=true");  // a bare boolean, as Ultralytics
    CHECK(contains(error_of([] { one("cos_lr=1"); }), "expected True or False"));
  }
  SECTION("cache") {
    CHECK(one("cache=True") == "data.cache=ram");
    CHECK(one("cache=ram") == "data.cache=ram");
    CHECK(one("cache=disk") == "data.cache=disk");
    CHECK(one("cache=False") == "data.cache=none");
    CHECK(contains(error_of([] { one("cache=gpu"); }), "ram or disk"));
  }
  SECTION("amp") {
    CHECK(one("amp=True") == "train.precision=auto");
    CHECK(one("amp=bf16") == "train.precision=bf16");
    CHECK(one("amp=False") == "train.precision=fp32");
    CHECK(one("amp=fp32", "val") == "train.precision=fp32");
    CHECK(contains(error_of([] { one("amp=fp16"); }), "BF16 autocast"));
  }
  SECTION("numbers, lists and None") {
    CHECK(one("patience=0") == "train.patience=0");
    CHECK(one("patience=30") == "train.patience=30");
    CHECK(one("time=1.5") == "train.time=1.5");
    CHECK(one("time=None") == "train.time=0.0");
    CHECK(one("save_period=-1") == "train.save_period=0");
    CHECK(one("save_period=5") == "train.save_period=5");
    CHECK(contains(error_of([] { one("deterministic=True", "val"); }), "changes nothing"));
    CHECK(one("freeze=3") == "train.freeze=[0, 1, 2]");
    CHECK(one("freeze=[0,2]") == "train.freeze=[0, 2]");
    CHECK(one("freeze=None") == "train.freeze=[]");
    CHECK(contains(error_of([] { one("freeze=[23.cv2]"); }), "module names"));
    CHECK(one("imgsz=[320, 320]") == "data.imgsz=320");
    CHECK(contains(error_of([] { one("imgsz=320,640"); }), "square"));
    CHECK(one("batch=16", "val") == "val.batch=16");
    CHECK(contains(error_of([] { one("batch=-1"); }), "AutoBatch"));
    CHECK(contains(error_of([] { one("batch=0.7"); }), "AutoBatch"));
    CHECK(contains(error_of([] { one("fraction=100"); }), "image counts"));
    CHECK(contains(error_of([] { one("scale=(0.5,1.5)"); }), "range"));
    CHECK(contains(error_of([] { one("epochs=3.5"); }), "expected an integer"));
    CHECK(contains(error_of([] { one("lr0=fast"); }), "expected a number"));
    CHECK(contains(error_of([] { one("epochs=None"); }), "must not be None"));
    CHECK(contains(error_of([] { one("epochs="); }), "has no value"));
    CHECK(contains(error_of([] { one("epochs"); }), "needs a value: epochs=100"));
    CHECK(one("project=None") == "train.project=runs");
    CHECK(one("name='exp'") == "train.name=exp");
    CHECK(one("nms=False", "val") == "val.nms=false");
    CHECK(one("nms=None", "val") == "val.nms=true");
    // predict reads it too (8.4.190's predictor: end2end = args.nms is False); export does not.
    CHECK(one("nms=False", "predict") == "val.nms=false");
    CHECK(one("nms=True", "predict") == "val.nms=true");
    const std::string export_nms = error_of([] { one("nms=False", "export"); });
    CHECK(contains(export_nms,
                   "`nms` (Ultralytics) changes nothing in `detrain export` (it applies to train, "
                   "val, predict): detrain export always writes the NMS-free one-to-one head"));
  }
  SECTION("channels_last is runtime.memory_format in train, val and predict") {
    CHECK(one("channels_last=True") == "runtime.memory_format=nhwc");
    CHECK(one("channels_last=False", "val") == "runtime.memory_format=nchw");
    CHECK(one("channels_last=None", "predict") == "runtime.memory_format=auto");
    CHECK(contains(error_of([] { one("channels_last=nhwc"); }), "expected True, False or None"));
    CHECK(contains(error_of([] { one("channels_last=True", "export"); }), "writes NCHW"));
    CHECK(resolve("", {one("channels_last=True")}).experiment.runtime.memory_format == "nhwc");
    CHECK(Experiment().runtime.memory_format == "auto");
  }
  SECTION("conf follows the command, as Ultralytics' per-mode defaults") {
    CHECK(one("conf=0.1") == "val.conf=0.1");  // the validation during training
    CHECK(one("conf=0.1", "val") == "val.conf=0.1");
    CHECK(one("conf=0.4", "predict") == "val.predict_conf=0.4");
    CHECK(one("conf=None", "predict") == "val.predict_conf=0.25");
    CHECK(one("conf=None", "val") == "val.conf=0.001");
  }
}

TEST_CASE("unsupported and pointless Ultralytics arguments are errors naming them",
          "[unit][config][ultralytics_args]") {
  const std::string seg = error_of([] { one("overlap_mask=False"); });
  CHECK(seg ==
        "`overlap_mask` (Ultralytics) is not supported by detrain: segmentation tasks "
        "are not supported");
  CHECK(contains(error_of([] { one("multi_scale=0.5"); }),
                 "`multi_scale` (Ultralytics) is not supported"));
  CHECK(contains(error_of([] { one("save=True"); }), "training always writes last.ckpt"));
  CHECK(contains(error_of([] { one("show"); }), "`show` (Ultralytics) is not supported"));
  CHECK(contains(error_of([] { one("format=onnx", "export"); }), "detrain export -f"));
  CHECK(contains(error_of([] { one("task=detect"); }), "the task follows the model"));
  // One line each, as every ConfigError.
  CHECK_FALSE(contains(seg, "\n"));
  // Accepted by Ultralytics on any mode, but nothing in detrain predict reads train.epochs.
  const std::string epochs = error_of([] { one("epochs=3", "predict"); });
  CHECK(epochs ==
        "`epochs` (Ultralytics) changes nothing in `detrain predict` (it applies to "
        "train)");
  CHECK(contains(error_of([] { one("batch=1", "export"); }), "--batch N"));
  CHECK(contains(error_of([] { one("plots=True", "val"); }), "--plots"));
  CHECK(contains(error_of([] { tr({"epochs=3"}, "bench"); }), "section.key=value overrides only"));
}

TEST_CASE("yolo predict's own arguments go to detrain predict itself",
          "[unit][config][ultralytics_args]") {
  // The user's line: `yolo predict model=best.pt source=photos conf=0.5 imgsz=640
  // save_txt=True max_det=100` (model= is the caller's).
  const TranslatedArgs t = translate_ultralytics_args(
      {"source=photos", "conf=0.5", "imgsz=640", "save_txt=True", "max_det=100"}, "predict");
  CHECK(t.overrides ==
        std::vector<std::string>{"val.predict_conf=0.5", "data.imgsz=640", "val.max_det=100"});
  CHECK(t.own == std::map<std::string, std::string>{{"source", "photos"}, {"save_txt", "true"}});
  // Ultralytics spellings: quotes, bare booleans, any case; the last one given wins.
  CHECK(own({"source='my photos/*.jpg'"}).at("source") == "my photos/*.jpg");
  CHECK(own({"save_txt"}).at("save_txt") == "true");
  CHECK(own({"save=FALSE"}).at("save") == "false");
  CHECK(own({"name=exp", "exist_ok=True", "name=exp2"}) ==
        std::map<std::string, std::string>{{"exist_ok", "true"}, {"name", "exp2"}});
  // None is the command's default where 8.4.190's default is None, an error elsewhere.
  CHECK(own({"name=exp", "name=None"}).empty());
  CHECK(own({"source=None"}).empty());
  CHECK(contains(error_of([] { own({"save_txt=None"}); }), "must not be None"));
  CHECK(contains(error_of([] { own({"save_txt=yes"}); }), "expected True or False"));
  CHECK(contains(error_of([] { own({"source"}); }), "needs a value: source=VALUE"));
  // project is train.project there too: the folder predict numbers its runs in.
  CHECK(one("project=out", "predict") == "train.project=out");
  // Elsewhere they change nothing, and say what to use.
  CHECK(error_of([] { one("source=photos"); }) ==
        "`source` (Ultralytics) changes nothing in `detrain train` (it applies to predict)");
  CHECK(contains(error_of([] { one("save_txt=True", "val"); }), "(it applies to predict)"));
  CHECK(one("name=exp") == "train.name=exp");
  CHECK(one("exist_ok=True") == "train.exist_ok=true");
  // What detrain predict does not read is refused with the reason, never ignored.
  CHECK(contains(error_of([] { one("workers=4", "predict"); }), "decodes the next image"));
  CHECK(contains(error_of([] { one("amp=True", "predict"); }), "runs in fp32"));
  CHECK(contains(error_of([] { one("batch=8", "predict"); }), "one image at a time"));
  CHECK(contains(error_of([] { one("epochs=3", "predict"); }), "changes nothing"));
  CHECK(contains(error_of([] { one("classes=0", "predict"); }), "is not supported by detrain"));
  CHECK(contains(error_of([] { one("save_conf=True", "predict"); }), "not supported yet"));
  CHECK(contains(error_of([] { one("vid_stride=2", "predict"); }), "video"));
  CHECK(contains(error_of([] { one("half=True", "predict"); }), "did you mean `quantize`?"));
  CHECK(contains(error_of([] { one("show", "predict"); }), "is not supported by detrain"));
}

TEST_CASE("an Ultralytics argument that is a detrain option says what to type",
          "[unit][config][ultralytics_args]") {
  // resume=True is train.resume=auto; a checkpoint path is detrain's --resume.
  CHECK(tr({"resume=True"}) == std::vector<std::string>{"train.resume=auto"});
  CHECK(tr({"resume"}) == std::vector<std::string>{"train.resume=auto"});
  CHECK(tr({"resume=False"}) == std::vector<std::string>{"train.resume=restarts"});
  CHECK(error_of([] { one("resume=runs/train/weights/last.pt"); }) ==
        "`resume=runs/train/weights/last.pt` (Ultralytics) is a command-line option in detrain: "
        "detrain train "
        "--resume runs/train/weights/last.pt (resume=True continues the newest run: "
        "train.resume=auto)");
  CHECK(contains(error_of([] { one("format=onnx", "export"); }),
                 "`format=onnx` (Ultralytics) is a command-line option in detrain: detrain "
                 "export -f onnx"));
  CHECK(contains(error_of([] { one("verbose=False", "val"); }), "-q/--quiet"));
}

TEST_CASE("an unknown key names the nearest Ultralytics argument or detrain key",
          "[unit][config][ultralytics_args]") {
  const std::string typo = error_of([] { one("warmup_epoch=2"); });
  CHECK(contains(typo, "`warmup_epoch` is neither an Ultralytics 8.4.190 argument nor a detrain"));
  CHECK(contains(typo, "did you mean `warmup_epochs`?"));
  CHECK(contains(error_of([] { one("precision=fp32"); }), "did you mean `train.precision`?"));
  CHECK(contains(error_of([] { one("thread=4"); }), "did you mean `runtime.threads`?"));
  CHECK(contains(error_of([] { one("half=True"); }), "did you mean `quantize`?"));
  CHECK_FALSE(contains(error_of([] { one("zzzzzzzz=1"); }), "did you mean"));
}

TEST_CASE("dotted keys, model and data pass through unchanged",
          "[unit][config][ultralytics_args]") {
  const std::vector<std::string> args = {
      "train.precision=fp32", "model=yolo11n.pt", "epochs=2",
      "data=data/coco8.yaml", "data.nonsense=1",  "optim.lr0=1e-3"};
  CHECK(tr(args) == std::vector<std::string>{"train.precision=fp32", "model=yolo11n.pt",
                                             "train.epochs=2", "data=data/coco8.yaml",
                                             "data.nonsense=1", "optim.lr0=1e-3"});
  // Both forms of one key on a line: resolve applies them in order, the last wins.
  const auto out = tr({"lr0=0.02", "optim.lr0=0.005"});
  CHECK(resolve("", out).experiment.optim.lr0 == 0.005);
}

TEST_CASE("docs/ultralytics-args.md is what ultralytics_args_markdown() renders",
          "[unit][config][ultralytics_args]") {
  const std::string path = source_dir() + "/docs/ultralytics-args.md";
  const std::string expected = ultralytics_args_markdown();
  if (std::getenv("DETRAIN_REGENERATE_DOCS")) write_file_atomic(path, expected);
  INFO("regenerate with: DETRAIN_REGENERATE_DOCS=1 build/detrain_tests \"[ultralytics_args]\"");
  CHECK(read_file(path) == expected);
  CHECK(contains(expected, "| `epochs` | `100` | `train.epochs` (train) |"));
  CHECK(contains(expected,
                 "| `conf` | `None` | `val.conf` (train, val), `val.predict_conf` "
                 "(predict) |"));
  CHECK(contains(expected, "| `source` | `None` | `-s/--source` (predict) |"));
  CHECK(
      contains(expected, "| `name` | `None` | `train.name` (train), its folder name (predict) |"));
}
