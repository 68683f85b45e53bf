// See ultralytics_pt.h.
#include "weights/ultralytics_pt.h"

#include <caffe2/serialize/inline_container.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <limits>
#include <regex>
#include <set>
#include <sstream>

#include "common/errors.h"
#include "common/strings.h"
#include "model/builder.h"
#include "weights/pickle.h"

namespace detrain::weights {

namespace fs = std::filesystem;
using Kind = Value::Kind;

// What torch.save streams of Ultralytics models name: torch's module classes and rebuild
// functions, Ultralytics' classes, and the plain containers and values their attributes use.
// Everything stays inert (pickle.h); the list only tells a file of another program apart.
bool ultralytics_global_allowed(const std::string& module, const std::string& name) {
  if (starts_with(module, "ultralytics.") || module == "ultralytics") return true;
  if (starts_with(module, "torch.nn.modules.") || module == "torch.nn.parameter") return true;
  static const std::set<std::string> exact{
      "collections.OrderedDict", "collections.defaultdict", "builtins.set", "builtins.frozenset",
      "builtins.dict", "builtins.list", "builtins.tuple", "builtins.slice",
      // getattr(<class>, '<name>'): how protocol-2 streams
      // name a function nested in a class (the Pose head
      // of 8.0-8.2 keeps Detect.forward); inert data
      "builtins.getattr", "builtins.complex", "copyreg._reconstructor", "builtins.object",
      "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor",
      "torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state", "torch.Size",
      "torch.device", "torch.torch_version.TorchVersion", "numpy.dtype", "numpy.ndarray",
      "numpy.core.multiarray.scalar", "numpy.core.multiarray._reconstruct",
      "numpy._core.multiarray.scalar", "numpy._core.multiarray._reconstruct", "_codecs.encode",
      "pathlib.PosixPath", "pathlib.WindowsPath", "pathlib.Path", "types.SimpleNamespace",
      "argparse.Namespace", "datetime.datetime", "datetime.date", "datetime.timedelta",
      "datetime.timezone"};
  if (exact.count(module + "." + name)) return true;
  // Storage classes (HalfStorage, ...) and dtypes (torch.float16) of the torch module.
  if (module == "torch" && ends_with(name, "Storage")) return true;
  static const std::set<std::string> dtypes{"float16", "float32", "float64", "bfloat16", "int64",
                                            "int32",   "int16",   "int8",    "uint8",    "bool"};
  return module == "torch" && dtypes.count(name);
}

namespace {

struct StorageType {
  c10::ScalarType dtype;
  size_t bytes;
};

std::optional<StorageType> storage_type(const std::string& name) {
  static const std::map<std::string, StorageType> types{
      {"HalfStorage", {c10::kHalf, 2}},     {"FloatStorage", {c10::kFloat, 4}},
      {"DoubleStorage", {c10::kDouble, 8}}, {"BFloat16Storage", {c10::kBFloat16, 2}},
      {"LongStorage", {c10::kLong, 8}},     {"IntStorage", {c10::kInt, 4}},
      {"ShortStorage", {c10::kShort, 2}},   {"CharStorage", {c10::kChar, 1}},
      {"ByteStorage", {c10::kByte, 1}},     {"BoolStorage", {c10::kBool, 1}}};
  const auto it = types.find(name);
  if (it == types.end()) return std::nullopt;
  return it->second;
}

std::string scalar_text(const Value* v) {
  if (!v) return "";
  switch (v->kind) {
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return v->b ? "True" : "False";
    case Kind::kInt:
      return std::to_string(v->i);
    case Kind::kFloat: {
      std::ostringstream s;
      s.precision(12);
      s << v->f;
      return s.str();
    }
    case Kind::kString:
      return v->s;
    default:
      return "";
  }
}

// A pickled Python string as a YAML scalar that the model YAML reader types as Python's
// literal_eval would (model/yaml_args.h): plain when it holds only name characters ("None",
// "nearest", "nn.Upsample", "nc"), else single-quoted (a string whatever it holds).
std::string yaml_string(const std::string& s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ||
           c == '+';
  });
  if (plain) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// Python's shortest repr of a float, always with a '.' or exponent so YAML reads a float.
std::string yaml_float(double f) {
  char buffer[64];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, f).ptr;
  std::string text(buffer, end);
  if (text.find_first_of(".en") == std::string::npos) text += ".0";
  return text;
}

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  UltralyticsModelFile read() {
    open();
    const Pickle pickle = parse();
    return from_checkpoint(*pickle.root);
  }

 private:
  [[noreturn]] void fail(const std::string& why) const { throw ModelError(path_ + " " + why); }

  void open() {
    try {
      archive_ = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path_);
      if (!archive_->hasRecord("data.pkl"))
        fail("is not a torch.save archive (no data.pkl); pass an Ultralytics .pt file");
    } catch (const c10::Error&) {
      fail(
          "is truncated or corrupt (its zip archive cannot be read); re-download or re-export "
          "the file");
    }
    if (archive_->hasRecord("byteorder")) {
      const std::string order = record("byteorder");
      if (order != "little")
        fail("stores tensors in " + order + "-endian order, which is not supported");
    }
  }

  std::string record(const std::string& name) {
    try {
      auto [data, size] = archive_->getRecord(name);
      return std::string(static_cast<const char*>(data.get()), size);
    } catch (const c10::Error&) {
      fail("has a record " + name + " that cannot be read (the file is truncated or corrupt)");
    }
  }

  Pickle parse() {
    const std::string bytes = record("data.pkl");
    try {
      return read_pickle(bytes, ultralytics_global_allowed);
    } catch (const PickleRefused& e) {
      const std::string what =
          starts_with(e.global, "torchvision.") ? " (a torchvision model)" : "";
      fail("is not an Ultralytics model file: it names " + e.global + what +
           "; detrain reads the .pt files Ultralytics writes (YOLOv8, YOLO11, YOLO26, detect "
           "and pose)");
    } catch (const PickleError& e) {
      fail(std::string("has a malformed data.pkl (") + e.what() + "); the file is damaged");
    }
  }

  const Value* model_object(const Value& root) {
    if (!root.is(Kind::kDict))
      fail("holds a " + root.describe() +
           ", not an Ultralytics checkpoint (a dict with 'model'); pass the .pt Ultralytics wrote");
    const Value* model = root.get("model");
    if (!model)
      fail(
          "has no 'model' key (" +
          std::string(root.get("state_dict") || root.entries.empty() ? "" : "a bare state dict? ") +
          "not an Ultralytics checkpoint); pass the .pt Ultralytics wrote");
    const Value* ema = root.get("ema");
    if (ema && ema->is(Kind::kObject)) {
      file_.weights_of = "ema";
      return ema;
    }
    if (!model->is(Kind::kObject))
      fail("is unusable: its 'model' is " + model->describe() + " and it has no 'ema' weights");
    file_.weights_of = "model";
    return model;
  }

  void read_task(const Value& model) {
    const std::string cls = model.class_name();
    file_.model_class = cls.substr(cls.rfind('.') + 1);
    if (file_.model_class == "DetectionModel")
      file_.task = "detect";
    else if (file_.model_class == "PoseModel")
      file_.task = "pose";
    else
      fail("holds a " + cls +
           "; detrain trains and runs detection and pose models (DetectionModel, PoseModel) only");
  }

  void read_arch(const Value& model) {
    const Value* yaml = model.get("yaml");
    if (!yaml || !yaml->is(Kind::kDict))
      fail("is unusable: its model has no 'yaml' architecture dict");
    if (const Value* f = yaml->get("yaml_file"); f && f->is(Kind::kString))
      file_.yaml_file = fs::path(f->s).filename().string();
    if (const Value* s = yaml->get("scale"); s && s->is(Kind::kString)) file_.scale = s->s;
    for (const char* key : {"channels", "ch"})
      if (const Value* ch = yaml->get(key); ch && ch->is(Kind::kInt) && ch->i != 3)
        fail("is a " + std::to_string(ch->i) +
             "-channel model; detrain reads RGB (3-channel) models");
    if (const Value* act = yaml->get("activation"); act && !act->is(Kind::kNone))
      fail("is built with activation " + scalar_text(act) +
           " (its yaml's 'activation'); detrain builds SiLU models only");
    if (const Value* nc = yaml->get("nc"); nc && nc->is(Kind::kInt)) file_.yaml_nc = nc->i;
    check_rows(*yaml);
    yaml_ = yaml;
    if (const Value* k = yaml->get("kpt_shape")) {
      if (!(k->is(Kind::kList) || k->is(Kind::kTuple)) || k->items.size() != 2 ||
          !k->items[0]->is(Kind::kInt) || !k->items[1]->is(Kind::kInt))
        fail("is unusable: its kpt_shape is not [K, 2|3]");
      file_.kpt_shape = std::array<int64_t, 2>{k->items[0]->i, k->items[1]->i};
    }
    if (file_.task == "pose" && !file_.kpt_shape) fail("is a pose model without kpt_shape");
  }

  // The rows as the reference's parse_model reads them: [from, repeats, module, args], every
  // module one detrain builds (YOLOv5u's, v9's, v10's or RT-DETR's layers are named here, in
  // one line, instead of deep in the builder).
  void check_rows(const Value& yaml) {
    const std::vector<std::string> known = model::known_modules();
    int64_t index = 0;
    for (const char* section : {"backbone", "head"}) {
      const Value* rows = yaml.get(section);
      if (!rows || !(rows->is(Kind::kList) || rows->is(Kind::kTuple)))
        fail("is unusable: its yaml has no '" + std::string(section) + "' list of rows");
      for (const Value* row : rows->items) {
        if (!(row->is(Kind::kList) || row->is(Kind::kTuple)) || row->items.size() != 4 ||
            !row->items[2]->is(Kind::kString))
          fail("is unusable: its yaml's layer " + std::to_string(index) +
               " is not [from, repeats, module, args]");
        const std::string& module = row->items[2]->s;
        if (std::find(known.begin(), known.end(), module) == known.end())
          fail("is built with " + module + " (its layer " + std::to_string(index) +
               "), a module detrain does not build; detrain builds YOLOv8, YOLO11 and YOLO26 "
               "detect and pose models (" +
               join(known, ", ") + ")");
        ++index;
      }
    }
  }

  std::string flow(const Value* v, int depth = 0) {
    if (depth > 16) fail("is unusable: its yaml is nested too deeply");
    switch (v->kind) {
      case Kind::kNone:
        return "null";
      case Kind::kBool:
        return v->b ? "true" : "false";
      case Kind::kInt:
        return std::to_string(v->i);
      case Kind::kFloat:
        return yaml_float(v->f);
      case Kind::kString:
        return yaml_string(v->s);
      case Kind::kList:
      case Kind::kTuple: {
        std::vector<std::string> parts;
        for (const Value* x : v->items) parts.push_back(flow(x, depth + 1));
        return "[" + join(parts, ", ") + "]";
      }
      default:
        fail("is unusable: its yaml holds a " + v->describe() + " where a value belongs");
    }
  }

  // The yaml dict as a detrain model YAML: only the keys the builder reads (yaml_file, scale,
  // channels are read above), nc the head's.
  std::string arch_text(const Value& yaml) {
    std::string out = "nc: " + std::to_string(file_.nc) + "\n";
    for (const char* key : {"depth_multiple", "width_multiple", "kpt_shape", "reg_max", "end2end"})
      if (const Value* v = yaml.get(key); v && !v->is(Kind::kNone))
        out += std::string(key) + ": " + flow(v) + "\n";
    if (const Value* scales = yaml.get("scales"); scales && scales->is(Kind::kDict)) {
      out += "scales:\n";
      for (const auto& [k, v] : scales->entries)
        out += "  " + (k->is(Kind::kString) ? yaml_string(k->s) : flow(k)) + ": " + flow(v) + "\n";
    }
    int64_t index = 0;
    for (const char* section : {"backbone", "head"}) {
      out += std::string(section) + ":\n";
      for (const Value* row : yaml.get(section)->items)
        out += "  - " + row_text(row, index++) + "\n";
    }
    return out;
  }

  // A row as the file's weights built it. C3k2's c3k argument is the one a dict cannot say for
  // sure: releases before 8.4 set it on every C3k2 when `scale in "mlx"`, a Python substring
  // test that the empty scale of a YAML without scales passes, where 8.4.190 tests set
  // membership; the weights show which block each C3k2 holds (a C3k has cv3, a Bottleneck not).
  std::string row_text(const Value* row, int64_t index) {
    const bool c3k2 = row->items.size() == 4 && row->items[2]->is(Kind::kString) &&
                      row->items[2]->s == "C3k2" && row->items[3]->is(Kind::kList) &&
                      !row->items[3]->items.empty();
    if (!c3k2) return flow(row);
    const std::string prefix = "model." + std::to_string(index) + ".m.0.";
    bool holds_c3k = false;
    for (const auto& entry : file_.state)
      holds_c3k = holds_c3k || entry.first.rfind(prefix + "cv3.", 0) == 0;
    if (!holds_c3k) return flow(row);  // Bottlenecks (or an attention block): the dict says so
    std::vector<std::string> args;
    for (const Value* a : row->items[3]->items) args.push_back(flow(a));
    if (args.size() < 2) args.resize(2);
    args[1] = "true";
    return "[" + flow(row->items[0]) + ", " + flow(row->items[1]) + ", C3k2, [" + join(args, ", ") +
           "]]";
  }

  // nc as the file's tensors say it (the yaml dict's nc is what the model was first built
  // with; a head trained for another class count may not have updated it).
  void decide_nc() {
    const int64_t head = head_class_count(file_.state);
    const auto names = static_cast<int64_t>(file_.names.size());
    file_.nc = head > 0 ? head : names > 0 ? names : file_.yaml_nc;
    if (file_.nc <= 0) fail("is unusable: neither its head, its names nor its yaml give nc");
    if (names != file_.nc) {
      if (names > 0 && !file_.placeholder_names)
        fail("has " + std::to_string(names) + " class names but its head predicts " +
             std::to_string(file_.nc) + " classes; the file is inconsistent");
      file_.names.clear();
      for (int64_t i = 0; i < file_.nc; ++i) file_.names.push_back(std::to_string(i));
      file_.placeholder_names = true;
    }
  }

  void read_names(const Value& model) {
    const Value* names = model.get("names");
    if (!names) return;
    if (names->is(Kind::kDict)) {
      std::map<int64_t, std::string> by_index;
      for (const auto& [k, v] : names->entries)
        if (k->is(Kind::kInt) && v->is(Kind::kString)) by_index[k->i] = v->s;
      int64_t next = 0;
      for (const auto& [i, n] : by_index) {
        if (i != next++) fail("has class names not indexed 0..nc-1");
        file_.names.push_back(n);
      }
    } else if (names->is(Kind::kList)) {
      for (const Value* v : names->items) file_.names.push_back(v->is(Kind::kString) ? v->s : "");
    }
    bool placeholder = true;
    for (size_t i = 0; i < file_.names.size(); ++i)
      placeholder = placeholder && file_.names[i] == std::to_string(i);
    file_.placeholder_names = placeholder;
  }

  torch::Tensor tensor(const TensorRef& t, const std::string& name) {
    const auto type = storage_type(t.storage.type);
    if (!type) fail("has " + name + " stored as " + t.storage.type + ", which is not supported");
    auto it = storages_.find(t.storage.key);
    if (it == storages_.end()) {
      const std::string key = "data/" + t.storage.key;
      if (!archive_->hasRecord(key))
        fail("lacks the storage " + key + " of " + name + " (a truncated file)");
      std::string bytes = record(key);
      if (bytes.size() / type->bytes < static_cast<size_t>(t.storage.numel))
        fail("has the storage " + key + " of " + name + " shorter than its " +
             std::to_string(t.storage.numel) + " elements");
      it = storages_.emplace(t.storage.key, std::move(bytes)).first;
    }
    const int64_t numel = static_cast<int64_t>(it->second.size() / type->bytes);
    if (t.offset < 0) fail("has " + name + " at a negative storage offset");
    // The last element the view reaches, overflow-checked: it must lie inside the storage.
    int64_t last = t.offset;
    bool empty = false;
    for (size_t d = 0; d < t.sizes.size(); ++d) {
      if (t.sizes[d] < 0 || t.strides[d] < 0)
        fail("has " + name + " with a negative size or stride");
      if (t.sizes[d] == 0) empty = true;
      if (t.sizes[d] <= 1 || t.strides[d] == 0) continue;
      if (t.sizes[d] - 1 > (std::numeric_limits<int64_t>::max() - last) / t.strides[d])
        fail("has " + name + " reaching outside its storage");
      last += (t.sizes[d] - 1) * t.strides[d];
    }
    if (!empty && last >= numel) fail("has " + name + " reaching outside its storage");
    if (empty) return torch::empty(t.sizes, torch::TensorOptions().dtype(type->dtype));
    const torch::Tensor flat =
        torch::from_blob(it->second.data(), {numel}, torch::TensorOptions().dtype(type->dtype));
    torch::Tensor out = flat.as_strided(t.sizes, t.strides, t.offset);
    if (file_.dtype.empty() && out.is_floating_point())
      file_.dtype = type->dtype == c10::kHalf ? "float16" : std::string(c10::toString(type->dtype));
    return out.is_floating_point() ? out.to(torch::kFloat32).contiguous() : out.clone();
  }

  // nn.Module.state_dict(): per module in pre-order, its parameters, then its persistent
  // buffers, then its children.
  void walk(const Value& module, const std::string& prefix, int depth) {
    if (depth > 64) fail("is unusable: its module tree is nested deeper than any YOLO model");
    const std::string cls = module.class_name();
    if (!starts_with(cls, "torch.nn.modules.") && !starts_with(cls, "ultralytics.nn."))
      fail("has module '" + prefix + "' of class " + (cls.empty() ? module.describe() : cls) +
           ", not a torch or Ultralytics layer");
    std::set<std::string> non_persistent;
    if (const Value* s = module.get("_non_persistent_buffers_set"); s && s->is(Kind::kSet))
      for (const Value* v : s->items)
        if (v->is(Kind::kString)) non_persistent.insert(v->s);
    auto tensors = [&](const char* key) {
      const Value* d = module.get(key);
      if (!d) return;
      if (!d->is(Kind::kDict)) fail("has module '" + prefix + "' with a malformed " + key);
      for (const auto& [k, v] : d->entries) {
        if (!k->is(Kind::kString))
          fail("has module '" + prefix + "' with a non-string tensor name");
        if (v->is(Kind::kNone) || non_persistent.count(k->s)) continue;
        const std::string name = prefix + k->s;
        if (!v->is(Kind::kTensor))
          fail("has " + name + " as a " + v->describe() + ", not a tensor");
        file_.state.emplace_back(name, tensor(v->tensor, name));
      }
    };
    tensors("_parameters");
    tensors("_buffers");
    const Value* children = module.get("_modules");
    if (!children) return;
    if (!children->is(Kind::kDict)) fail("has module '" + prefix + "' with a malformed _modules");
    for (const auto& [k, v] : children->entries) {
      if (v->is(Kind::kNone)) continue;
      if (!k->is(Kind::kString) || !v->is(Kind::kObject))
        fail("has module '" + prefix + "' with a malformed child");
      walk(*v, prefix + k->s + ".", depth + 1);
    }
  }

  UltralyticsModelFile from_checkpoint(const Value& root) {
    file_.path = path_;
    const Value* model = model_object(root);
    read_task(*model);
    read_arch(*model);
    read_names(*model);
    walk(*model, "", 0);
    if (file_.state.empty()) fail("is unusable: its model holds no tensors");
    decide_nc();
    file_.arch_yaml = arch_text(*yaml_);
    file_.version = scalar_text(root.get("version"));
    file_.date = scalar_text(root.get("date"));
    if (const Value* e = root.get("epoch"); e && e->is(Kind::kInt)) file_.epoch = e->i;
    if (const Value* args = root.get("train_args"); args && args->is(Kind::kDict))
      for (const auto& [k, v] : args->entries)
        if (k->is(Kind::kString) && !scalar_text(v).empty())
          file_.train_args[k->s] = scalar_text(v);
    return std::move(file_);
  }

  std::string path_;
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> archive_;
  std::map<std::string, std::string> storages_;
  UltralyticsModelFile file_;
  const Value* yaml_ = nullptr;  // the model's yaml dict, while the pickle is alive
};

}  // namespace

bool is_ultralytics_pt(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  return ext == ".pt" || ext == ".pth";
}

UltralyticsModelFile read_ultralytics_pt(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw IoError(path + " does not exist");
  if (!fs::is_regular_file(path, ec)) throw IoError(path + " is not a file");
  return Reader(path).read();
}

namespace {
template <class State>
int64_t class_count(const State& state) {
  // model.<head>.cv3.0.<k>.weight: the class tower of the first level; its last module (the
  // largest k) is the plain conv with nc outputs. one2one_cv3 (end-to-end heads) is its twin.
  static const std::regex tower(R"(^model\.(\d+)\.(?:one2one_)?cv3\.0\.(\d+)\.weight$)");
  int64_t layer = -1, last = -1, nc = 0;
  for (const auto& [name, t] : state) {
    std::smatch m;
    if (!std::regex_match(name, m, tower) || t.dim() != 4) continue;
    const int64_t l = std::stoll(m[1]), k = std::stoll(m[2]);
    if (l > layer || (l == layer && k > last)) layer = l, last = k, nc = t.size(0);
  }
  return nc;
}
}  // namespace

int64_t head_class_count(const std::vector<std::pair<std::string, torch::Tensor>>& state) {
  return class_count(state);
}
int64_t head_class_count(const std::map<std::string, torch::Tensor>& state) {
  return class_count(state);
}

std::map<std::string, torch::Tensor> state_map(const UltralyticsModelFile& file) {
  return std::map<std::string, torch::Tensor>(file.state.begin(), file.state.end());
}

}  // namespace detrain::weights
