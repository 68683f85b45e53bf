// See ultralytics_args.h. kArgs below is the only place the mapping lives.
#include "config/ultralytics_args.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>

#include "common/errors.h"
#include "common/strings.h"
#include "config/config.h"

namespace detrain::config {

namespace {

// Bits of the commands a detrain key takes effect in.
enum Command : unsigned { kTrain = 1, kVal = 2, kPredict = 4, kExport = 8 };
constexpr unsigned kTV = kTrain | kVal;
constexpr unsigned kTVP = kTrain | kVal | kPredict;
constexpr unsigned kAll = kTrain | kVal | kPredict | kExport;
constexpr const char* kCommandNames[] = {"train", "val", "predict", "export"};

// How a value is spelled in Ultralytics and how it becomes detrain's.
enum class Value {
  kCaller,       // model, data: translated by the caller
  kUnsupported,  // no detrain key; `note` says why
  kFlag,         // a command-line option of detrain instead; `note` says which
  kInt,
  kFloat,
  kBool,  // True/False in any case, as Ultralytics' smart_value
  kText,  // verbatim (project, name, split)
  kOptimizer,
  kDevice,
  kCache,
  kAmp,
  kPeriod,  // an epoch count where < 1 switches the feature off (save_period=-1 -> 0)
  kBatch,
  kImgsz,
  kFraction,
  kScale,
  kFreeze,
  kNms,
  kResume,        // True -> auto, False -> the default; a checkpoint path is --resume PATH
  kChannelsLast,  // True -> nhwc, False -> nchw (None -> auto, the default)
};

struct Arg {
  const char* name;
  const char* default_value;  // 8.4.190's cfg/default.yaml; "None" where it is left empty
  Value value;
  const char* key;                // detrain key, nullptr when none
  unsigned commands;              // where `key` takes effect
  const char* note;               // the translation's rules, or why detrain has no key
  const char* alt_key = nullptr;  // a second key for other commands (conf: val.predict_conf)
  unsigned alt_commands = 0;
  const char* elsewhere = nullptr;   // what to use in the commands neither key reaches
  unsigned own_commands = 0;         // commands that read the argument themselves (source=)
  const char* own_option = nullptr;  // the option it stands for there, or what it sets
};

constexpr const char* kSegment = "segmentation tasks are not supported";
constexpr const char* kClassify = "classification tasks are not supported";
constexpr const char* kDepth = "depth tasks are not supported";
constexpr const char* kVideo = "video and stream sources are not supported";

// Every key of ultralytics 8.4.190 cfg/default.yaml, in its order (113 rows), checked by hand
// with this bash line (one line; no output: the same names in the same order):
//   diff <(python3 -c "import yaml; print('\n'.join(yaml.safe_load(open(
//   '/work/ref/u190/cfg/default.yaml'))))") <(grep -o '^    {"[a-z_0-9]*"'
//   src/config/ultralytics_args.cpp | tr -d ' {"')
const Arg kArgs[] = {
    {"task", "detect", Value::kUnsupported, nullptr, 0,
     "the task follows the model: detect, or pose with a pose architecture "
     "(models/yolo26-pose.yaml) or checkpoint; segment, semantic, depth, classify and OBB tasks "
     "are not supported"},
    {"mode", "train", Value::kUnsupported, nullptr, 0,
     "the mode is detrain's command (detrain train, val, predict, export); track and benchmark "
     "are not supported"},
    {"model", "None", Value::kCaller, nullptr, 0,
     "translated by the command line before this table (architecture YAML, model name, weights "
     "or checkpoint)"},
    {"data", "None", Value::kCaller, nullptr, 0,
     "translated by the command line before this table (data.dataset)"},
    {"epochs", "100", Value::kInt, "train.epochs", kTrain, ""},
    {"time", "None", Value::kFloat, "train.time", kTrain,
     "hours; None -> 0 (off); as Ultralytics it overrides epochs: the epoch count is "
     "re-estimated after every epoch and training stops when the time has passed"},
    {"patience", "100", Value::kInt, "train.patience", kTrain,
     "0 turns early stopping off, as Ultralytics"},
    {"batch", "16", Value::kBatch, "data.batch", kTrain,
     "an image count, the global batch over all ranks as in Ultralytics; validation during "
     "training uses twice it, as Ultralytics; AutoBatch (-1 or a GPU-memory fraction) is not "
     "supported",
     "val.batch", kVal,
     "detrain predict runs one image at a time (yolo predict's batch=1); detrain export takes "
     "--batch N or --dynamic"},
    {"imgsz", "640", Value::kImgsz, "data.imgsz", kAll,
     "square only: [h, w] needs h == w; a multiple of 32 (Ultralytics rounds up, detrain says "
     "so)"},
    {"save", "True", Value::kBool, nullptr, 0,
     "predict: False writes no drawn images (as --no-draw); predictions.json is always written",
     nullptr, 0, "training always writes last.ckpt and best.ckpt", kPredict, "--no-draw"},
    {"save_period", "-1", Value::kPeriod, "train.save_period", kTrain,
     "< 1 -> 0 (off); the copies are weights/epochN.ckpt after the N-th epoch counted from 1, "
     "where Ultralytics names them from 0 (epoch0.pt after the first)"},
    {"cache", "False", Value::kCache, "data.cache", kTV,
     "True and ram -> ram, disk, False -> none"},
    {"device", "None", Value::kDevice, "runtime.device", kTVP,
     "0 -> cuda:0, cuda:N, cuda, cpu; several GPUs (0,1) run as detrain train --nproc 2 "
     "runtime.device=cuda; None and -1 (automatic choice), mps, npu and xpu are not supported",
     nullptr, 0, "detrain export runs on the CPU"},
    {"workers", "8", Value::kInt, "data.workers", kTV,
     "loader threads per rank (Ultralytics: worker processes per rank)", nullptr, 0,
     "detrain predict decodes the next image on one thread while the model runs"},
    {"project", "None", Value::kText, "train.project", kTVP,
     "None -> runs; run directories are <project>/<name> (Ultralytics adds the task: "
     "runs/detect/<name>); val: where --plots writes; predict: where its folder goes unless -o"},
    {"name", "None", Value::kText, "train.name", kTrain,
     "None -> train, or predict for detrain predict; numbered (train2, predict2, ...) unless "
     "exist_ok",
     nullptr, 0, "detrain val names its folder with --plots -o DIR", kPredict, "its folder name"},
    {"exist_ok", "False", Value::kBool, "train.exist_ok", kTrain, "", nullptr, 0, nullptr, kPredict,
     "reuse its folder"},
    {"pretrained", "True", Value::kUnsupported, nullptr, 0,
     "initial weights follow model= (an architecture YAML trains from scratch, weights or a "
     "checkpoint start from them) or model.weights=FILE"},
    {"cls_remap", "True", Value::kUnsupported, nullptr, 0,
     "not supported yet (remapping pretrained class rows by class name)"},
    {"optimizer", "auto", Value::kOptimizer, "optim.optimizer", kTrain,
     "SGD, MuSGD, AdamW, auto (any case); Adam, Adamax, NAdam, RAdam and RMSProp are not "
     "supported"},
    {"verbose", "True", Value::kFlag, nullptr, 0, "-v/--verbose or -q/--quiet (any command)"},
    {"seed", "0", Value::kInt, "runtime.seed", kTrain, ""},
    {"deterministic", "True", Value::kBool, "runtime.deterministic", kTrain,
     "as Ultralytics, training only; runtime.deterministic_warn_only=false makes an operation "
     "without a deterministic implementation an error instead of a warning"},
    {"single_cls", "False", Value::kBool, "data.single_cls", kTV, ""},
    {"rect", "False", Value::kUnsupported, nullptr, 0,
     "rectangular training batches are not supported; validation always uses rect batches, "
     "as Ultralytics' (val.rect), and predict letterboxes with minimal padding as yolo "
     "predict's rect=True"},
    {"cos_lr", "False", Value::kBool, "train.cos_lr", kTrain, ""},
    {"close_mosaic", "10", Value::kInt, "augment.close_mosaic", kTrain,
     "0 keeps mosaic on, as Ultralytics"},
    {"resume", "False", Value::kResume, "train.resume", kTrain,
     "True -> auto (continue the newest <project>/<name> run from its last good checkpoint, "
     "else start one), False -> restarts (the default); a checkpoint: detrain train --resume "
     "RUN_DIR (runs/train, or its weights/last.ckpt)"},
    {"amp", "True", Value::kAmp, "train.precision", kTV,
     "True -> auto (BF16 autocast where it was measured faster, as the reference's AMP check "
     "decides for FP16), bf16 -> bf16, False and fp32 -> fp32; fp16 is not supported",
     nullptr, 0,
     "detrain predict runs in fp32, as yolo predict does (train.precision=bf16-always: BF16); "
     "detrain export --half writes float16 ONNX"},
    {"fraction", "1.0", Value::kFraction, "data.fraction", kTrain,
     "a fraction of the training images; image counts (> 1) and split lists are not supported"},
    {"profile", "False", Value::kUnsupported, nullptr, 0,
     "not supported (ONNX/TensorRT speed profiling for loggers)"},
    {"freeze", "None", Value::kFreeze, "train.freeze", kTrain,
     "None -> []; N -> [0, ..., N-1] (the first N layers); a list of layer indices as is; "
     "module names (23.cv2) are not supported"},
    {"multi_scale", "0.0", Value::kUnsupported, nullptr, 0,
     "not supported yet (multi-scale training)"},
    {"compile", "False", Value::kUnsupported, nullptr, 0,
     "not supported: torch.compile has no LibTorch equivalent"},
    {"channels_last", "None", Value::kChannelsLast, "runtime.memory_format", kTVP,
     "True -> nhwc, False -> nchw, None -> auto (nhwc on CUDA and on x86 CPUs with AVX2 or "
     "AVX-512); "
     "Ultralytics trains channels-last on CUDA only and infers channels-last on x86 CPUs too",
     nullptr, 0, "detrain export writes NCHW graphs and weights"},
    {"overlap_mask", "True", Value::kUnsupported, nullptr, 0, kSegment},
    {"mask_ratio", "4", Value::kUnsupported, nullptr, 0, kSegment},
    {"dropout", "0.0", Value::kUnsupported, nullptr, 0, kClassify},
    {"val", "True", Value::kBool, "train.val", kTrain,
     "False still validates after the last epoch, as Ultralytics"},
    {"split", "val", Value::kText, "val.split", kTV,
     "val or train (test is not supported); training validates on it too, as Ultralytics"},
    {"save_json", "False", Value::kBool, "val.save_json", kTrain,
     "predictions.json after every validation (detrain's default is true)", nullptr, 0,
     "detrain val writes it with --save-json FILE"},
    {"conf", "None", Value::kFloat, "val.conf", kTV,
     "None -> 0.001 (train, val) or 0.25 (predict), Ultralytics' defaults; on train it is the "
     "threshold of the validation during training, as in Ultralytics",
     "val.predict_conf", kPredict, "detrain export applies no threshold"},
    {"iou", "0.7", Value::kFloat, "val.iou", kTVP, "", nullptr, 0, "detrain export embeds no NMS"},
    {"max_det", "300", Value::kInt, "val.max_det", kAll, ""},
    {"quantize", "None", Value::kUnsupported, nullptr, 0,
     "not supported: inference runs in fp32 or BF16 autocast (amp); detrain export --half "
     "writes float16 ONNX; no int8"},
    {"dnn", "False", Value::kUnsupported, nullptr, 0, "OpenCV DNN inference is not supported"},
    {"plots", "True", Value::kBool, "train.plots", kTrain, "", nullptr, 0,
     "detrain val draws them with --plots"},
    {"nms", "None", Value::kNms, "val.nms", kTVP,
     "None and True -> true (NMS on the one-to-many branch, Ultralytics' default for val and "
     "predict), False -> false (the NMS-free one-to-one head)",
     nullptr, 0,
     "detrain export always writes the NMS-free one-to-one head of end-to-end models, an output "
     "that needs no NMS after it (8.4.190 writes it with nms=False; its default is the "
     "one-to-many branch for NMS)"},
    {"source", "None", Value::kText, nullptr, 0,
     "an image, a folder or a quoted pattern (\"dir/*.jpg\"); videos, streams, URLs and "
     "screenshots are not supported",
     nullptr, 0, nullptr, kPredict, "-s/--source"},
    {"vid_stride", "1", Value::kUnsupported, nullptr, 0, kVideo},
    {"stream_buffer", "False", Value::kUnsupported, nullptr, 0, kVideo},
    {"visualize", "False", Value::kUnsupported, nullptr, 0,
     "not supported (feature-map and TP/FP/FN visualisation)"},
    {"augment", "False", Value::kUnsupported, nullptr, 0,
     "test-time augmentation is not supported"},
    {"agnostic_nms", "False", Value::kBool, "val.agnostic_nms", kTVP, "", nullptr, 0,
     "NMS across classes; with `nms=False` the end-to-end top-k takes each anchor's best class "
     "once, as 8.4.190; detrain export embeds no NMS"},
    {"classes", "None", Value::kUnsupported, nullptr, 0,
     "not supported yet (filtering detections by class)"},
    {"retina_masks", "False", Value::kUnsupported, nullptr, 0, kSegment},
    {"embed", "None", Value::kUnsupported, nullptr, 0, "feature embeddings are not supported"},
    {"show", "False", Value::kUnsupported, nullptr, 0,
     "not supported: detrain predict writes the drawn images to its folder instead"},
    {"save_frames", "False", Value::kUnsupported, nullptr, 0, kVideo},
    {"save_txt", "False", Value::kBool, nullptr, 0, "labels/<name>.txt per image in YOLO format",
     nullptr, 0, nullptr, kPredict, "--save-txt"},
    {"save_conf", "False", Value::kUnsupported, nullptr, 0,
     "not supported yet (--save-txt writes class and box without the confidence)"},
    {"save_crop", "False", Value::kUnsupported, nullptr, 0,
     "not supported yet (cropped detections)"},
    {"show_labels", "True", Value::kUnsupported, nullptr, 0,
     "always on: drawn images show the labels"},
    {"show_conf", "True", Value::kUnsupported, nullptr, 0,
     "always on: drawn images show the confidences"},
    {"show_boxes", "True", Value::kUnsupported, nullptr, 0,
     "always on: drawn images show the boxes"},
    {"line_width", "None", Value::kUnsupported, nullptr, 0,
     "not supported (the drawn line width is fixed by detrain)"},
    {"format", "torchscript", Value::kFlag, nullptr, 0,
     "detrain export -f onnx (the default) or safetensors; the other formats "
     "are not supported"},
    {"optimize", "False", Value::kUnsupported, nullptr, 0, "DEEPX export is not supported"},
    {"dynamic", "False", Value::kFlag, nullptr, 0,
     "detrain export --dynamic (a free batch dimension; height and width stay "
     "fixed)"},
    {"simplify", "True", Value::kUnsupported, nullptr, 0,
     "not applicable: detrain writes the ONNX graph itself, with no onnxslim pass to switch"},
    {"opset", "None", Value::kFlag, nullptr, 0, "detrain export --opset N (17 to 21)"},
    {"workspace", "None", Value::kUnsupported, nullptr, 0, "TensorRT export is not supported"},
    {"lr0", "0.01", Value::kFloat, "optim.lr0", kTrain,
     "optimizer=auto chooses its own, as Ultralytics"},
    {"lrf", "0.01", Value::kFloat, "train.lrf", kTrain, ""},
    {"momentum", "0.937", Value::kFloat, "optim.momentum", kTrain, ""},
    {"weight_decay", "0.0005", Value::kFloat, "optim.weight_decay", kTrain,
     "scaled by batch x accumulate / nbs, as Ultralytics"},
    {"warmup_epochs", "3.0", Value::kFloat, "train.warmup_epochs", kTrain, ""},
    {"warmup_momentum", "0.8", Value::kFloat, "train.warmup_momentum", kTrain, ""},
    {"warmup_bias_lr", "0.1", Value::kFloat, "train.warmup_bias_lr", kTrain, ""},
    {"distill_model", "None", Value::kUnsupported, nullptr, 0,
     "knowledge distillation is not supported"},
    {"dis", "6.0", Value::kUnsupported, nullptr, 0, "knowledge distillation is not supported"},
    {"box", "7.5", Value::kFloat, "loss.box", kTrain, ""},
    {"cls", "0.5", Value::kFloat, "loss.cls", kTrain, ""},
    {"cls_pw", "0.0", Value::kUnsupported, nullptr, 0,
     "not supported yet (class-frequency weights)"},
    {"dfl", "1.5", Value::kFloat, "loss.dfl", kTrain, ""},
    {"pose", "12.0", Value::kFloat, "loss.pose", kTrain, ""},
    {"kobj", "1.0", Value::kFloat, "loss.kobj", kTrain, ""},
    {"rle", "1.0", Value::kFloat, "loss.rle", kTrain, ""},
    {"angle", "1.0", Value::kUnsupported, nullptr, 0, "OBB tasks are not supported"},
    {"dlog", "1.0", Value::kUnsupported, nullptr, 0, kDepth},
    {"dgrad", "0.5", Value::kUnsupported, nullptr, 0, kDepth},
    {"dlam", "1.0", Value::kUnsupported, nullptr, 0, kDepth},
    {"nbs", "64", Value::kInt, "train.nbs", kTrain, ""},
    {"hsv_h", "0.015", Value::kFloat, "augment.hsv_h", kTrain, ""},
    {"hsv_s", "0.7", Value::kFloat, "augment.hsv_s", kTrain, ""},
    {"hsv_v", "0.4", Value::kFloat, "augment.hsv_v", kTrain, ""},
    {"degrees", "0.0", Value::kFloat, "augment.degrees", kTrain, ""},
    {"translate", "0.1", Value::kFloat, "augment.translate", kTrain, ""},
    {"scale", "0.5", Value::kScale, "augment.scale", kTrain,
     "one gain; a (min, max) range is not supported"},
    {"shear", "0.0", Value::kFloat, "augment.shear", kTrain, ""},
    {"perspective", "0.0", Value::kFloat, "augment.perspective", kTrain, ""},
    {"flipud", "0.0", Value::kFloat, "augment.flipud", kTrain, ""},
    {"fliplr", "0.5", Value::kFloat, "augment.fliplr", kTrain, ""},
    {"bgr", "0.0", Value::kFloat, "augment.bgr", kTrain, ""},
    {"mosaic", "1.0", Value::kFloat, "augment.mosaic", kTrain, ""},
    {"mixup", "0.0", Value::kFloat, "augment.mixup", kTrain, ""},
    {"cutmix", "0.0", Value::kUnsupported, nullptr, 0, "not supported yet (CutMix)"},
    {"copy_paste", "0.0", Value::kUnsupported, nullptr, 0,
     "segmentation and OBB tasks are not supported (copy-paste needs masks)"},
    {"copy_paste_mode", "flip", Value::kUnsupported, nullptr, 0,
     "segmentation and OBB tasks are not supported (copy-paste needs masks)"},
    {"auto_augment", "randaugment", Value::kUnsupported, nullptr, 0, kClassify},
    {"erasing", "0.4", Value::kUnsupported, nullptr, 0, kClassify},
    {"cfg", "None", Value::kUnsupported, nullptr, 0,
     "Ultralytics config files are not read: use -c/--config with a detrain experiment YAML "
     "(configs/*.yaml)"},
    {"tracker", "tracktrack.yaml", Value::kUnsupported, nullptr, 0, "tracking is not supported"},
};

// Ultralytics 8.4.190 still accepts these old names (cfg/__init__.py _handle_deprecation);
// naming their successor is a better hint than the nearest spelling.
const std::map<std::string, std::string>& deprecated_names() {
  static const std::map<std::string, std::string> names = {{"half", "quantize"},
                                                           {"int8", "quantize"},
                                                           {"end2end", "nms"},
                                                           {"boxes", "show_boxes"},
                                                           {"hide_labels", "show_labels"},
                                                           {"hide_conf", "show_conf"},
                                                           {"line_thickness", "line_width"}};
  return names;
}

const Arg* find_arg(const std::string& name) {
  for (const Arg& a : kArgs)
    if (name == a.name) return &a;
  return nullptr;
}

unsigned command_bit(const std::string& command) {
  for (unsigned i = 0; i < 4; ++i)
    if (command == kCommandNames[i]) return 1u << i;
  throw ConfigError(
      "Ultralytics arguments (epochs=3) apply to detrain train, val, predict and "
      "export; `detrain " +
      command + "` takes section.key=value overrides only");
}

std::string command_list(unsigned commands) {
  if (commands == kAll) return "every command";
  std::vector<std::string> names;
  for (unsigned i = 0; i < 4; ++i)
    if (commands & (1u << i)) names.emplace_back(kCommandNames[i]);
  return join(names, ", ");
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Shells usually strip quotes, but `name='exp'` inside a script line reaches us quoted, and
// Ultralytics' literal_eval strips them too.
std::string unquote(const std::string& text) {
  std::string v = trim(text);
  if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front())
    v = trim(v.substr(1, v.size() - 2));
  return v;
}

bool is_none(const std::string& v) { return lower(v) == "none"; }

std::optional<bool> as_bool(const std::string& v) {
  const std::string l = lower(v);
  if (l == "true") return true;
  if (l == "false") return false;
  return std::nullopt;
}

bool is_int(const std::string& v) {
  size_t i = (!v.empty() && (v[0] == '-' || v[0] == '+')) ? 1 : 0;
  if (i == v.size()) return false;
  for (; i < v.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(v[i]))) return false;
  return true;
}

std::optional<double> as_number(const std::string& v) {
  if (v.empty()) return std::nullopt;
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (end != v.c_str() + v.size() || !std::isfinite(x)) return std::nullopt;
  return x;
}

// "[1, 2]", "(1, 2)" and "1,2" are lists in Ultralytics (literal_eval); a lone value is not.
std::optional<std::vector<std::string>> as_list(const std::string& v) {
  std::string body = v;
  const bool bracketed = v.size() >= 2 && ((v.front() == '[' && v.back() == ']') ||
                                           (v.front() == '(' && v.back() == ')'));
  if (bracketed)
    body = v.substr(1, v.size() - 2);
  else if (v.find(',') == std::string::npos)
    return std::nullopt;
  std::vector<std::string> items;
  for (const std::string& item : split(body, ',')) {
    std::string t = unquote(item);
    if (!t.empty()) items.push_back(t);
  }
  return items;
}

std::string quoted(const std::string& name, const std::string& value) {
  return "`" + name + "=" + value + "` (Ultralytics)";
}

// Detrain's default value text of every key ("train.project" -> "runs").
const std::map<std::string, std::string>& detrain_defaults() {
  static const std::map<std::string, std::string> defaults = [] {
    Experiment e;
    std::map<std::string, std::string> m;
    for (const FieldRef& f : fields_of(e)) m[f.name()] = value_text(f);
    return m;
  }();
  return defaults;
}

std::string device_value(const std::string& raw, unsigned command) {
  // Ultralytics' parse_device: lower case, "cuda:" and brackets dropped ("cuda:0" -> "0").
  std::string d = lower(raw);
  for (const char* drop : {"cuda:", "none", "(", ")", "[", "]", "'", " "}) {
    for (size_t at = d.find(drop); at != std::string::npos; at = d.find(drop))
      d.erase(at, std::char_traits<char>::length(drop));
  }
  const std::string q = quoted("device", raw);
  if (d.empty())
    throw ConfigError(q +
                      ": detrain does not choose the device itself; name it (device=cpu, "
                      "device=0)");
  if (d == "cpu" || d == "cuda") return d;
  if (d == "mps" || d == "mps:0")
    throw ConfigError(q + ": Apple MPS is not supported by detrain; use cpu or a CUDA GPU");
  if (starts_with(d, "npu") || starts_with(d, "xpu"))
    throw ConfigError(q +
                      ": Ascend NPU and Intel XPU devices are not supported by detrain; use "
                      "cpu or a CUDA GPU");
  const std::vector<std::string> ids = split(d, ',');
  for (const std::string& id : ids) {
    if (id == "-1")
      throw ConfigError(q +
                        ": choosing an idle GPU is not supported by detrain; name it "
                        "(device=0)");
    if (!is_int(id) || id[0] == '-' || id[0] == '+')
      throw ConfigError(q + ": expected cpu, cuda, cuda:N, a GPU index or indices (0,1)");
  }
  if (ids.size() == 1) return "cuda:" + std::to_string(std::stoi(ids[0]));
  // Several GPUs are several processes in detrain, which only its launcher starts; one GPU
  // silently instead of the requested set would mislead.
  std::string first_n;
  for (size_t i = 0; i < ids.size(); ++i) first_n += (i ? "," : "") + std::to_string(i);
  const std::string visible = d == first_n ? "" : "CUDA_VISIBLE_DEVICES=" + d + " ";
  if (command != kTrain)
    throw ConfigError(q + ": detrain runs this command on one device; name one (device=" + ids[0] +
                      ")");
  throw ConfigError(q + ": detrain trains on " + std::to_string(ids.size()) +
                    " GPUs as one process each: " + visible + "detrain train --nproc " +
                    std::to_string(ids.size()) + " runtime.device=cuda ...");
}

// The detrain value for `raw` (already unquoted, not None).
std::string translate_value(const Arg& a, const std::string& raw, unsigned command) {
  const std::string q = quoted(a.name, raw);
  auto number = [&]() {
    if (!as_number(raw)) throw ConfigError(q + ": expected a number");
    return raw;
  };
  auto integer = [&]() {
    if (!is_int(raw)) throw ConfigError(q + ": expected an integer");
    return raw;
  };
  switch (a.value) {
    case Value::kInt:
      return integer();
    case Value::kFloat:
      return number();
    case Value::kText:
      return raw;
    case Value::kBool:
    case Value::kNms: {
      const std::optional<bool> b = as_bool(raw);
      if (!b) throw ConfigError(q + ": expected True or False");
      return *b ? "true" : "false";
    }
    case Value::kOptimizer: {
      const std::string l = lower(raw);
      if (l == "sgd" || l == "musgd" || l == "adamw" || l == "auto") return l;
      if (l == "adam" || l == "adamax" || l == "nadam" || l == "radam" || l == "rmsprop")
        throw ConfigError(q + ": detrain supports SGD, MuSGD, AdamW and auto");
      throw ConfigError(q +
                        ": not an Ultralytics optimizer; detrain supports SGD, MuSGD, AdamW "
                        "and auto");
    }
    case Value::kDevice:
      return device_value(raw, command);
    case Value::kCache: {
      if (const std::optional<bool> b = as_bool(raw)) return *b ? "ram" : "none";
      const std::string l = lower(raw);
      if (l == "ram" || l == "disk") return l;
      throw ConfigError(q + ": expected True, False, ram or disk");
    }
    case Value::kAmp: {
      const std::optional<bool> b = as_bool(raw);
      const std::string l = lower(raw);
      if (b && *b) return "auto";
      if (l == "bf16") return "bf16";
      if ((b && !*b) || l == "fp32") return "fp32";
      if (l == "fp16")
        throw ConfigError(q +
                          ": detrain's mixed precision is BF16 autocast; use amp=True or "
                          "amp=bf16 (amp=False for fp32)");
      throw ConfigError(q + ": expected True, False, bf16 or fp32");
    }
    case Value::kPeriod:
      return std::stoll(integer()) < 1 ? "0" : raw;
    case Value::kBatch: {
      const std::optional<double> x = as_number(raw);
      if (!x) throw ConfigError(q + ": expected an image count");
      if (*x < 1)
        throw ConfigError(q +
                          ": AutoBatch (-1 or a GPU-memory fraction) is not supported by "
                          "detrain; give an image count");
      if (*x != std::floor(*x)) throw ConfigError(q + ": expected an image count");
      return std::to_string(static_cast<int64_t>(*x));
    }
    case Value::kImgsz: {
      std::vector<std::string> sizes{raw};
      if (auto list = as_list(raw)) sizes = *list;
      for (const std::string& s : sizes)
        if (!is_int(s)) throw ConfigError(q + ": expected an image size in pixels");
      if (sizes.empty() || sizes.size() > 2 ||
          (sizes.size() == 2 && std::stoll(sizes[0]) != std::stoll(sizes[1])))
        throw ConfigError(q + ": detrain's sizes are square; give one size (imgsz=640)");
      return sizes[0];
    }
    case Value::kFraction: {
      if (as_list(raw))
        throw ConfigError(q +
                          ": split lists are not supported by detrain; give the fraction of "
                          "the training images");
      const std::optional<double> x = as_number(raw);
      if (!x) throw ConfigError(q + ": expected a fraction");
      if (*x > 1)
        throw ConfigError(q +
                          ": image counts are not supported by detrain; give a fraction in "
                          "(0, 1]");
      return raw;
    }
    case Value::kScale:
      if (as_list(raw))
        throw ConfigError(q +
                          ": a (min, max) scale range is not supported by detrain; give one "
                          "gain");
      return number();
    case Value::kFreeze: {
      std::vector<std::string> layers;
      if (auto list = as_list(raw)) {
        layers = *list;
        for (const std::string& l : layers)
          if (!is_int(l))
            throw ConfigError(q +
                              ": module names are not supported by detrain; give layer "
                              "indices ([0, 1, 2]) or a count (freeze=3)");
      } else {
        if (!is_int(raw)) throw ConfigError(q + ": expected a layer count or a list of indices");
        for (int64_t i = 0; i < std::stoll(raw); ++i) layers.push_back(std::to_string(i));
      }
      return "[" + join(layers, ", ") + "]";
    }
    case Value::kResume:
      if (const std::optional<bool> b = as_bool(raw)) return *b ? "auto" : "restarts";
      throw ConfigError(q + " is a command-line option in detrain: detrain train --resume " + raw +
                        " (resume=True continues the newest run: train.resume=auto)");
    case Value::kChannelsLast:
      if (const std::optional<bool> b = as_bool(raw)) return *b ? "nhwc" : "nchw";
      throw ConfigError(q + ": expected True, False or None");
    case Value::kCaller:
    case Value::kUnsupported:
    case Value::kFlag:
      break;
  }
  throw ConfigError(q + ": internal error: no translation");  // unreachable: filtered earlier
}

[[noreturn]] void unknown_argument(const std::string& name) {
  std::string hint;
  const auto deprecated = deprecated_names().find(name);
  if (deprecated != deprecated_names().end()) {
    hint = deprecated->second;
  } else if (const auto detrain = keys_named(name); !detrain.empty()) {
    hint = join(detrain, "` or `");  // a detrain key without its section: "precision"
  } else {
    std::vector<std::string> candidates;
    for (const Arg& a : kArgs) candidates.emplace_back(a.name);
    for (const std::string& key : all_keys()) candidates.push_back(key.substr(key.find('.') + 1));
    hint = closest_match(name, candidates);
    if (!hint.empty() && !find_arg(hint)) hint = join(keys_named(hint), "` or `");
  }
  throw ConfigError("`" + name +
                    "` is neither an Ultralytics 8.4.190 argument nor a detrain key (section.key)" +
                    (hint.empty() ? std::string() : "; did you mean `" + hint + "`?"));
}

bool is_bool_default(const Arg& a) {
  return as_bool(a.default_value).has_value() || a.value == Value::kNms;
}

std::string escape_cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

TranslatedArgs translate_ultralytics_args(const std::vector<std::string>& args,
                                          const std::string& command) {
  const unsigned bit = command_bit(command);
  TranslatedArgs out;
  for (const std::string& arg : args) {
    const size_t eq = arg.find('=');
    const std::string name = trim(arg.substr(0, eq));
    if (name.find('.') != std::string::npos || name == "model" || name == "data") {
      out.overrides.push_back(arg);
      continue;
    }
    const Arg* a = find_arg(name);
    if (!a) unknown_argument(name);
    const bool refused = a->value == Value::kUnsupported || a->value == Value::kFlag;
    std::string value;
    if (eq == std::string::npos) {
      // Ultralytics turns a bare boolean argument into True and rejects any other bare one.
      if (!is_bool_default(*a) && !refused)
        throw ConfigError("`" + name + "` (Ultralytics) needs a value: " + name + "=" +
                          (a->own_commands & bit ? "VALUE" : a->default_value));
      value = "True";
    } else {
      value = unquote(arg.substr(eq + 1));
      if (value.empty()) throw ConfigError("`" + name + "=` (Ultralytics) has no value");
    }
    if (a->value == Value::kUnsupported)
      throw ConfigError("`" + name + "` (Ultralytics) is not supported by detrain: " + a->note);
    if (a->value == Value::kFlag)
      throw ConfigError(quoted(name, value) + " is a command-line option in detrain: " + a->note);
    const bool own = (a->own_commands & bit) != 0;
    const char* key = own                       ? nullptr
                      : (a->commands & bit)     ? a->key
                      : (a->alt_commands & bit) ? a->alt_key
                                                : nullptr;
    if (!key && !own) {
      std::string message = "`" + name + "` (Ultralytics) changes nothing in `detrain " + command +
                            "` (it applies to " +
                            command_list(a->commands | a->alt_commands | a->own_commands) + ")";
      if (a->elsewhere) message += ": " + std::string(a->elsewhere);
      throw ConfigError(message);
    }
    if (is_none(value) && a->value != Value::kDevice) {
      // None is "Ultralytics' default" where that is the default (conf, project, freeze); a key
      // whose default is a value rejects it, as Ultralytics' check_cfg does.
      if (std::string(a->default_value) != "None")
        throw ConfigError(quoted(name, value) + ": " + name + " must not be None (8.4.190's " +
                          "default is " + a->default_value + ")");
      if (own)
        out.own.erase(name);  // the command's default
      else
        out.overrides.push_back(std::string(key) + "=" + detrain_defaults().at(key));
      continue;
    }
    if (own)
      out.own[name] = translate_value(*a, value, bit);
    else
      out.overrides.push_back(std::string(key) + "=" + translate_value(*a, value, bit));
  }
  return out;
}

std::vector<UltralyticsArgInfo> ultralytics_arg_table() {
  std::vector<UltralyticsArgInfo> table;
  for (const Arg& a : kArgs) {
    UltralyticsArgInfo info;
    info.name = a.name;
    info.default_value = a.default_value;
    info.caller_translates = a.value == Value::kCaller;
    if (a.own_option) info.own_option = a.own_option;
    for (unsigned i = 0; i < 4; ++i)
      if (a.own_commands & (1u << i)) info.own_commands.emplace_back(kCommandNames[i]);
    info.note = a.note;
    auto add = [&](const char* key, unsigned commands) {
      if (!key) return;
      std::vector<std::string> names;
      for (unsigned i = 0; i < 4; ++i)
        if (commands & (1u << i)) names.emplace_back(kCommandNames[i]);
      info.targets.emplace_back(key, names);
    };
    add(a.key, a.commands);
    add(a.alt_key, a.alt_commands);
    table.push_back(std::move(info));
  }
  return table;
}

std::string ultralytics_args_markdown() {
  std::ostringstream md;
  md << R"(# Ultralytics arguments

<!-- Generated by ultralytics_args_markdown() from the table in src/config/ultralytics_args.cpp;
a test fails when the two differ. Regenerate with:
DETRAIN_REGENERATE_DOCS=1 build/detrain_tests "[ultralytics_args]" -->

detrain accepts the arguments of the Ultralytics 8.4.190 command line (`yolo train epochs=3
imgsz=320 batch=16 lr0=0.01 optimizer=SGD device=0`) beside its own `section.key=value`
overrides, and the two mix on one command line; they apply in the order given, so the last
word on a key wins:

- A flat key (`epochs=3`) is an Ultralytics argument. It becomes the detrain key in the table
  below, with Ultralytics' value spellings translated: `True`/`False` in any case,
  `optimizer=SGD` (any case) -> `sgd`, `device=0` -> `cuda:0`, `cache=True` -> `ram`,
  `amp=True` -> `bf16`, `freeze=3` -> `[0, 1, 2]`. `None` means Ultralytics' default where that
  is its default (`conf=None`: 0.001 for validation, 0.25 for predict). A bare boolean argument
  (`cos_lr`) means `True`, as in Ultralytics.
- A dotted key (`train.precision=fp32`) is detrain's own (`configs/default.yaml` lists them all)
  and passes unchanged.
- `model=` and `data=` are translated by the command line itself, and so are predict's own
  arguments (`source=`, `save=`, `save_txt=`, `name=`, `exist_ok=`: the option named in the
  table, where the argument and the option both given must agree):
  `detrain predict model=best.pt source=photos conf=0.5 save_txt=True` writes
  `runs/predict`, then `runs/predict2`, ... as `yolo predict` writes `runs/detect/predict`.
- An argument detrain has no equivalent for is an error that names it and says why, and so is
  a value detrain cannot honour (`optimizer=Adam`, `device=mps`, `batch=-1`) and an unknown key
  (with the nearest Ultralytics argument or detrain key).
- The detrain key column says which commands an argument acts in. Where Ultralytics reads an
  argument in another mode too, detrain follows (`conf` and `iou` on train set the validation
  during training). Where it would change nothing (`epochs` on predict) Ultralytics ignores it
  silently; detrain stops with an error instead.

| Ultralytics | default (8.4.190) | detrain key | note |
| --- | --- | --- | --- |
)";
  for (const Arg& a : kArgs) {
    std::vector<std::string> keys;
    if (a.value == Value::kCaller) keys.emplace_back("the command line");
    if (a.key) keys.push_back("`" + std::string(a.key) + "` (" + command_list(a.commands) + ")");
    if (a.alt_key)
      keys.push_back("`" + std::string(a.alt_key) + "` (" + command_list(a.alt_commands) + ")");
    if (a.own_option) {
      const std::string option = a.own_option;
      keys.push_back((option[0] == '-' ? "`" + option + "`" : option) + " (" +
                     command_list(a.own_commands) + ")");
    }
    const std::string key = keys.empty() ? "-" : join(keys, ", ");
    std::string note = a.note;
    if (a.elsewhere) note += std::string(note.empty() ? "" : "; ") + a.elsewhere;
    md << "| `" << a.name << "` | `" << a.default_value << "` | " << key << " | "
       << escape_cell(note) << " |\n";
  }
  return md.str();
}

}  // namespace detrain::config
