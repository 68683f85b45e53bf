// The architecture YAML interpreter; see builder.h. The module table at the bottom is the only
// place that maps YAML module names to constructors.
#include "model/builder.h"

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <numeric>

#include "common/errors.h"
#include "common/paths.h"
#include "common/strings.h"

namespace detrain::model {

namespace {

namespace fs = std::filesystem;

// ---- arguments -------------------------------------------------------------------------------

// One YAML argument, typed the way Python's literal_eval would type it.
struct Arg {
  enum class Kind { kNone, kInt, kFloat, kBool, kString, kList };
  Kind kind = Kind::kNone;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  std::vector<Arg> list;

  static Arg none() { return {}; }
  static Arg integer(int64_t v) {
    Arg a;
    a.kind = Kind::kInt;
    a.i = v;
    return a;
  }
  static Arg boolean(bool v) {
    Arg a;
    a.kind = Kind::kBool;
    a.b = v;
    return a;
  }
  static Arg ints(const std::vector<int64_t>& values) {
    Arg a;
    a.kind = Kind::kList;
    for (int64_t v : values) a.list.push_back(integer(v));
    return a;
  }
};

std::string repr(const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::kNone:
      return "None";
    case Arg::Kind::kInt:
      return std::to_string(a.i);
    case Arg::Kind::kBool:
      return a.b ? "True" : "False";
    case Arg::Kind::kString:
      return "'" + a.s + "'";
    case Arg::Kind::kFloat: {
      char buffer[64];
      auto result = std::to_chars(buffer, buffer + sizeof buffer, a.f);
      std::string text(buffer, result.ptr);
      if (text.find_first_of(".e") == std::string::npos) text += ".0";
      return text;
    }
    case Arg::Kind::kList: {
      std::vector<std::string> parts;
      for (const auto& item : a.list) parts.push_back(repr(item));
      return "[" + join(parts, ", ") + "]";
    }
  }
  return "?";
}

// Reading the arguments of one row, with the row named in every complaint.
class RowArgs {
 public:
  RowArgs(std::vector<Arg> args, std::string where)
      : args_(std::move(args)), where_(std::move(where)) {}

  size_t size() const { return args_.size(); }
  const std::vector<Arg>& all() const { return args_; }
  bool has(size_t i) const { return i < args_.size() && args_[i].kind != Arg::Kind::kNone; }

  int64_t integer(size_t i, int64_t fallback) const {
    if (!has(i)) return fallback;
    const auto& a = args_[i];
    if (a.kind == Arg::Kind::kInt) return a.i;
    if (a.kind == Arg::Kind::kBool) return a.b ? 1 : 0;
    throw fail(i, "an integer");
  }
  double real(size_t i, double fallback) const {
    if (!has(i)) return fallback;
    const auto& a = args_[i];
    if (a.kind == Arg::Kind::kFloat) return a.f;
    if (a.kind == Arg::Kind::kInt) return static_cast<double>(a.i);
    throw fail(i, "a number");
  }
  bool flag(size_t i, bool fallback) const {
    if (!has(i)) return fallback;
    const auto& a = args_[i];
    if (a.kind == Arg::Kind::kBool) return a.b;
    if (a.kind == Arg::Kind::kInt) return a.i != 0;
    throw fail(i, "True or False");
  }
  std::pair<int64_t, int64_t> pair(size_t i, std::pair<int64_t, int64_t> fallback) const {
    if (!has(i)) return fallback;
    const auto& a = args_[i];
    if (a.kind == Arg::Kind::kInt) return {a.i, a.i};
    if (a.kind == Arg::Kind::kList && a.list.size() == 2 && a.list[0].kind == Arg::Kind::kInt &&
        a.list[1].kind == Arg::Kind::kInt)
      return {a.list[0].i, a.list[1].i};
    throw fail(i, "an integer or a pair of integers");
  }
  std::string text(size_t i, const std::string& fallback) const {
    if (!has(i)) return fallback;
    if (args_[i].kind == Arg::Kind::kString) return args_[i].s;
    throw fail(i, "a string");
  }

  ModelError fail(size_t i, const std::string& expected) const {
    return ModelError(where_ + ": argument " + std::to_string(i + 1) + " is " + repr(args_[i]) +
                      ", expected " + expected);
  }
  ModelError fail(const std::string& message) const { return ModelError(where_ + ": " + message); }

 private:
  std::vector<Arg> args_;
  std::string where_;
};

bool is_integer_text(const std::string& s) {
  if (s.empty()) return false;
  size_t start = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  return start < s.size() && std::all_of(s.begin() + static_cast<long>(start), s.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c));
         });
}

// YAML scalar -> Arg, resolving the symbols the reference's parse_model resolves (nc,
// kpt_shape) and Python literals (None, True, False) written unquoted.
Arg to_arg(const YAML::Node& node, const std::map<std::string, Arg>& symbols,
           const std::string& where) {
  if (node.IsNull()) return Arg::none();
  if (node.IsSequence()) {
    Arg a;
    a.kind = Arg::Kind::kList;
    for (const auto& item : node) a.list.push_back(to_arg(item, symbols, where));
    return a;
  }
  if (!node.IsScalar()) throw ModelError(where + ": arguments must be scalars or lists");
  const std::string text = node.Scalar();
  Arg a;
  if (node.Tag() == "!") {  // quoted: always a string
    a.kind = Arg::Kind::kString;
    a.s = text;
    return a;
  }
  if (auto it = symbols.find(text); it != symbols.end()) return it->second;
  if (text == "None" || text == "null" || text == "~") return Arg::none();
  if (text == "True" || text == "true") return Arg::boolean(true);
  if (text == "False" || text == "false") return Arg::boolean(false);
  if (is_integer_text(text)) return Arg::integer(std::stoll(text));
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end && *end == '\0' && !text.empty()) {
    a.kind = Arg::Kind::kFloat;
    a.f = value;
    return a;
  }
  a.kind = Arg::Kind::kString;
  a.s = text;
  return a;
}

// ---- scale rules -----------------------------------------------------------------------------

int64_t make_divisible(double x, int64_t divisor) {
  return static_cast<int64_t>(std::ceil(x / static_cast<double>(divisor))) * divisor;
}

// Python's round(): halves go to the even neighbour.
int64_t python_round(double x) { return static_cast<int64_t>(std::nearbyint(x)); }

int64_t gcd(int64_t a, int64_t b) { return b == 0 ? a : gcd(b, a % b); }

// ---- the module table ------------------------------------------------------------------------

enum class Role {
  kBase,      // args[0] is the output width: scaled; the input width is prepended
  kRepeat,    // kBase whose repeats go inside the module (inserted as the third argument)
  kConcat,    // output width = sum of input widths
  kUpsample,  // output width = input width, stride divided by the scale factor
  kHead,      // Detect / Pose / Pose26
};

struct ModuleEntry {
  Role role;
  // Builds the module from the resolved arguments (c1, c2, ... for base roles).
  std::function<torch::nn::AnyModule(const RowArgs&)> make;
  // Spatial stride of the module's output relative to its input.
  std::function<int64_t(const RowArgs&)> stride = [](const RowArgs&) { return int64_t{1}; };
};

ConvOptions conv_options(const RowArgs& a, size_t first, bool depthwise, int64_t c1, int64_t c2) {
  ConvOptions o;
  o.k = a.integer(first, 1);
  o.s = a.integer(first + 1, 1);
  if (depthwise) {
    o.g = gcd(c1, c2);
    o.d = a.integer(first + 2, 1);
    o.act = a.flag(first + 3, true);
  } else {
    o.p = a.integer(first + 2, -1);
    o.g = a.integer(first + 3, 1);
    o.d = a.integer(first + 4, 1);
    o.act = a.flag(first + 5, true);
  }
  return o;
}

// nn.Upsample(size=None, scale_factor, mode="nearest"): the whole-number factor.
int64_t upsample_factor(const RowArgs& a) {
  if (a.has(0)) throw a.fail("nn.Upsample with a fixed size is not supported; use a scale");
  if (a.text(2, "nearest") != "nearest") throw a.fail("only mode 'nearest' is supported");
  const double scale = a.real(1, 2.0);
  if (scale < 1 || scale != std::floor(scale))
    throw a.fail("the upsampling factor must be a whole number >= 1");
  return static_cast<int64_t>(scale);
}

const std::map<std::string, ModuleEntry>& module_table() {
  static const std::map<std::string, ModuleEntry> table = [] {
    std::map<std::string, ModuleEntry> t;
    auto conv_stride = [](const RowArgs& a) { return a.integer(3, 1); };
    // Conv(c1, c2, k=1, s=1, p=None, g=1, d=1, act=True)
    t["Conv"] = {Role::kBase,
                 [](const RowArgs& a) {
                   const int64_t c1 = a.integer(0, 0), c2 = a.integer(1, 0);
                   return torch::nn::AnyModule(Conv(c1, c2, conv_options(a, 2, false, c1, c2)));
                 },
                 conv_stride};
    // DWConv(c1, c2, k=1, s=1, d=1, act=True): groups = gcd(c1, c2)
    t["DWConv"] = {Role::kBase,
                   [](const RowArgs& a) {
                     const int64_t c1 = a.integer(0, 0), c2 = a.integer(1, 0);
                     return torch::nn::AnyModule(Conv(c1, c2, conv_options(a, 2, true, c1, c2)));
                   },
                   conv_stride};
    // Bottleneck(c1, c2, shortcut=True, g=1, k=(3, 3), e=0.5)
    t["Bottleneck"] = {Role::kBase, [](const RowArgs& a) {
                         return torch::nn::AnyModule(Bottleneck(a.integer(0, 0), a.integer(1, 0),
                                                                a.flag(2, true), a.integer(3, 1),
                                                                a.pair(4, {3, 3}), a.real(5, 0.5)));
                       }};
    // C2f(c1, c2, n=1, shortcut=False, g=1, e=0.5)
    t["C2f"] = {Role::kRepeat, [](const RowArgs& a) {
                  return torch::nn::AnyModule(C2f(a.integer(0, 0), a.integer(1, 0), a.integer(2, 1),
                                                  C2fBlock::kC2f, a.flag(3, false), a.integer(4, 1),
                                                  a.real(5, 0.5)));
                }};
    // C3(c1, c2, n=1, shortcut=True, g=1, e=0.5)
    t["C3"] = {Role::kRepeat, [](const RowArgs& a) {
                 return torch::nn::AnyModule(C3(a.integer(0, 0), a.integer(1, 0), a.integer(2, 1),
                                                a.flag(3, true), a.integer(4, 1), a.real(5, 0.5),
                                                std::pair<int64_t, int64_t>{1, 3}));
               }};
    // C3k2(c1, c2, n=1, c3k=False, e=0.5, attn=False, g=1, shortcut=True)
    t["C3k2"] = {
        Role::kRepeat, [](const RowArgs& a) {
          const C2fBlock block = a.flag(5, false)   ? C2fBlock::kAttention
                                 : a.flag(3, false) ? C2fBlock::kC3k
                                                    : C2fBlock::kBottleneck;
          return torch::nn::AnyModule(C2f(a.integer(0, 0), a.integer(1, 0), a.integer(2, 1), block,
                                          a.flag(7, true), a.integer(6, 1), a.real(4, 0.5)));
        }};
    // SPPF(c1, c2, k=5, n=3, shortcut=False)
    t["SPPF"] = {
        Role::kBase, [](const RowArgs& a) {
          return torch::nn::AnyModule(SPPF(a.integer(0, 0), a.integer(1, 0), a.integer(2, 5),
                                           a.integer(3, 3), a.flag(4, false)));
        }};
    // C2PSA(c1, c2, n=1, e=0.5)
    t["C2PSA"] = {Role::kRepeat, [](const RowArgs& a) {
                    if (a.integer(0, 0) != a.integer(1, 0))
                      throw a.fail("C2PSA needs equal input and output widths");
                    return torch::nn::AnyModule(
                        C2PSA(a.integer(0, 0), a.integer(1, 0), a.integer(2, 1), a.real(3, 0.5)));
                  }};
    t["nn.Upsample"] = {Role::kUpsample, [](const RowArgs& a) {
                          return torch::nn::AnyModule(Upsample(upsample_factor(a)));
                        }};
    // Concat(dimension=1)
    t["Concat"] = {Role::kConcat,
                   [](const RowArgs& a) { return torch::nn::AnyModule(Concat(a.integer(0, 1))); }};
    for (const char* head : {"Detect", "Pose", "Pose26"}) t[head] = {Role::kHead, nullptr};
    return t;
  }();
  return table;
}

// ---- reading the YAML ------------------------------------------------------------------------

YAML::Node load_yaml(const std::string& path) {
  if (!fs::exists(path)) throw ModelError("model YAML '" + path + "' does not exist");
  try {
    return YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw IoError("cannot read model YAML '" + path + "'");
  } catch (const YAML::Exception& e) {
    throw ModelError(path + ": invalid YAML at line " + std::to_string(e.mark.line + 1) + ": " +
                     e.msg);
  }
}

template <class T>
T read_scalar(const YAML::Node& node, const std::string& key, const std::string& path, T fallback) {
  const auto value = node[key];
  if (!value) return fallback;
  try {
    return value.as<T>();
  } catch (const YAML::Exception&) {
    throw ModelError(path + ": key '" + key + "' has an invalid value '" +
                     (value.IsScalar() ? value.Scalar() : std::string("<list>")) + "'");
  }
}

std::vector<std::string> available_models() {
  std::vector<std::string> names;
  const fs::path dir = fs::path(source_dir()) / "models";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".yaml")
      names.push_back("models/" + entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

HeadKind head_kind(const std::string& name) {
  if (name == "Pose") return HeadKind::kPose;
  if (name == "Pose26") return HeadKind::kPose26;
  return HeadKind::kDetect;
}

}  // namespace

std::string ArchInfo::name() const {
  const auto dash = family.find('-');
  if (dash == std::string::npos) return family + scale;
  return family.substr(0, dash) + scale + family.substr(dash);
}

std::vector<std::string> known_modules() {
  std::vector<std::string> names;
  for (const auto& [name, entry] : module_table()) names.push_back(name);
  return names;
}

std::pair<std::string, std::string> resolve_arch(const std::string& arch) {
  std::vector<std::string> candidates{arch};
  if (fs::path(arch).extension() != ".yaml") candidates.push_back(arch + ".yaml");
  for (size_t i = 0, n = candidates.size(); i < n; ++i) {
    if (fs::path(candidates[i]).parent_path().empty())
      candidates.push_back("models/" + candidates[i]);
  }
  for (const auto& candidate : candidates) {
    const std::string found = resolve_resource(candidate);
    if (fs::exists(found)) return {found, ""};
  }
  // "yolo26n-pose.yaml" -> "yolo26-pose.yaml" with scale n.
  for (const auto& candidate : candidates) {
    const fs::path p(candidate);
    std::string stem = p.stem().string();
    const auto dash = stem.find('-');
    const std::string head = stem.substr(0, dash);
    if (head.size() < 2 || std::string("nsmlx").find(head.back()) == std::string::npos) continue;
    const std::string scale(1, head.back());
    stem = head.substr(0, head.size() - 1) + (dash == std::string::npos ? "" : stem.substr(dash));
    const std::string found = resolve_resource((p.parent_path() / (stem + ".yaml")).string());
    if (fs::exists(found)) return {found, scale};
  }
  throw ModelError("model '" + arch + "' not found; available: " + join(available_models(), ", "));
}

Network build_network(const BuildOptions& options) {
  const auto [path, implied_scale] = resolve_arch(options.arch);
  const YAML::Node root = load_yaml(path);
  if (!root.IsMap()) throw ModelError(path + ": expected a mapping with backbone and head");

  Network net;
  ArchInfo& arch = net.arch;
  arch.path = path;
  arch.family = fs::path(path).stem().string();

  // Scale: explicit option, else the one in the name, else the YAML's first.
  std::string scale = options.scale.empty() ? implied_scale : options.scale;
  if (!implied_scale.empty() && !options.scale.empty() && options.scale != implied_scale)
    throw ModelError("model '" + options.arch + "' names scale " + implied_scale + " but scale " +
                     options.scale + " was requested");
  arch.max_channels = std::numeric_limits<int64_t>::max();
  if (const auto scales = root["scales"]) {
    if (!scales.IsMap() || scales.size() == 0)
      throw ModelError(path + ": 'scales' must map scale names to [depth, width, max_channels]");
    std::vector<std::string> names;
    for (const auto& item : scales) names.push_back(item.first.as<std::string>());
    if (scale.empty()) {
      scale = names.front();
      spdlog::warn("{}: no scale given, using the first one, '{}'", path, scale);
    }
    const auto row = scales[scale];
    if (!row)
      throw ModelError(path + " has no scale '" + scale + "' (choose " + join(names, ", ") + ")");
    try {
      const auto values = row.as<std::vector<double>>();
      if (values.size() != 3) throw YAML::Exception(YAML::Mark(), "");
      arch.depth = values[0];
      arch.width = values[1];
      arch.max_channels = static_cast<int64_t>(values[2]);
    } catch (const YAML::Exception&) {
      throw ModelError(path + ": scale '" + scale + "' must be [depth, width, max_channels]");
    }
  } else {
    arch.depth = read_scalar<double>(root, "depth_multiple", path, 1.0);
    arch.width = read_scalar<double>(root, "width_multiple", path, 1.0);
  }
  arch.scale = scale;
  arch.nc = options.nc > 0 ? options.nc : read_scalar<int64_t>(root, "nc", path, 80);
  if (arch.nc <= 0) throw ModelError(path + ": nc must be positive");
  arch.reg_max = read_scalar<int64_t>(root, "reg_max", path, 16);
  arch.end2end = read_scalar<bool>(root, "end2end", path, false);
  if (arch.reg_max < 1) throw ModelError(path + ": reg_max must be >= 1");
  std::array<int64_t, 2> kpt_shape{17, 3};
  const bool yaml_has_kpts = static_cast<bool>(root["kpt_shape"]);
  if (yaml_has_kpts) {
    const auto values = read_scalar<std::vector<int64_t>>(root, "kpt_shape", path, {});
    if (values.size() != 2 || values[0] < 1 || (values[1] != 2 && values[1] != 3))
      throw ModelError(path + ": kpt_shape must be [keypoints, 2 or 3]");
    kpt_shape = {values[0], values[1]};
  }
  if (options.kpt_shape) kpt_shape = *options.kpt_shape;

  const std::map<std::string, Arg> symbols{{"nc", Arg::integer(arch.nc)},
                                           {"kpt_shape", Arg::ints({kpt_shape[0], kpt_shape[1]})}};

  std::vector<YAML::Node> rows;
  for (const char* section : {"backbone", "head"}) {
    const auto list = root[section];
    if (!list) throw ModelError(path + ": missing '" + section + "' section");
    if (!list.IsSequence()) throw ModelError(path + ": '" + section + "' must be a list of rows");
    for (const auto& row : list) rows.push_back(row);
  }

  // Non-legacy (depthwise) cls towers whenever the architecture uses C3k2, as the reference.
  bool legacy = true;
  for (const auto& row : rows) {
    if (row.IsSequence() && row.size() == 4 && row[2].IsScalar() && row[2].Scalar() == "C3k2")
      legacy = false;
  }

  std::vector<int64_t> channels;  // output width per layer
  std::vector<int64_t> strides;   // output stride per layer
  const auto& table = module_table();
  for (size_t index = 0; index < rows.size(); ++index) {
    const auto& node = rows[index];
    const std::string where = path + " layer " + std::to_string(index);
    if (!node.IsSequence() || node.size() != 4)
      throw ModelError(where + ": a row is [from, repeats, module, args]");
    LayerRow row;
    row.index = static_cast<int>(index);
    row.module = node[2].Scalar();
    const auto entry_it = table.find(row.module);
    if (entry_it == table.end()) {
      const std::string hint = closest_match(row.module, known_modules());
      throw ModelError(where + ": unknown module '" + row.module + "'" +
                       (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
                       " (known: " + join(known_modules(), ", ") + ")");
    }
    const ModuleEntry& entry = entry_it->second;

    // from: -1 = previous layer, other negatives count back, non-negatives are absolute.
    std::vector<int64_t> from_raw;
    try {
      from_raw = node[0].IsSequence() ? node[0].as<std::vector<int64_t>>()
                                      : std::vector<int64_t>{node[0].as<int64_t>()};
    } catch (const YAML::Exception&) {
      throw ModelError(where + ": 'from' must be an integer or a list of integers");
    }
    if (from_raw.empty()) throw ModelError(where + ": 'from' is empty");
    {
      std::vector<std::string> parts;
      for (int64_t f : from_raw) parts.push_back(std::to_string(f));
      row.from_text = node[0].IsSequence() ? "[" + join(parts, ", ") + "]" : parts[0];
    }
    std::vector<int64_t> in_channels, in_strides;
    for (int64_t f : from_raw) {
      const int64_t absolute = f < 0 ? static_cast<int64_t>(index) + f : f;
      if (absolute >= static_cast<int64_t>(index) || absolute < -1 || (absolute == -1 && f != -1))
        throw ModelError(where + ": 'from' " + std::to_string(f) +
                         " does not name an earlier layer");
      row.from.push_back(static_cast<int>(absolute));
      in_channels.push_back(absolute < 0 ? 3 : channels[absolute]);
      in_strides.push_back(absolute < 0 ? 1 : strides[absolute]);
    }
    int64_t repeats = 1;
    try {
      repeats = node[1].as<int64_t>();
    } catch (const YAML::Exception&) {
      throw ModelError(where + ": repeats must be an integer");
    }
    if (repeats < 1) throw ModelError(where + ": repeats must be >= 1");
    if (repeats > 1) repeats = std::max<int64_t>(python_round(repeats * arch.depth), 1);

    std::vector<Arg> args;
    const auto args_node = node[3];
    if (args_node && !args_node.IsNull()) {
      if (!args_node.IsSequence()) throw ModelError(where + ": args must be a list");
      for (const auto& a : args_node) args.push_back(to_arg(a, symbols, where));
    }

    if (entry.role == Role::kHead) {
      if (index + 1 != rows.size()) throw ModelError(where + ": the head must be the last row");
      if (row.from.size() < 1 || std::count(row.from.begin(), row.from.end(), -1) > 0)
        throw ModelError(where + ": the head takes earlier layers as inputs");
      RowArgs a(args, where);
      HeadOptions head;
      head.kind = head_kind(row.module);
      head.nc = a.integer(0, arch.nc);
      head.reg_max = arch.reg_max;
      head.end2end = arch.end2end;
      head.legacy = legacy;
      head.channels = in_channels;
      head.strides = in_strides;
      std::vector<Arg> shown{Arg::integer(head.nc)};
      if (head.pose()) {
        if (!yaml_has_kpts && !options.kpt_shape)
          throw ModelError(where + ": a " + row.module + " head needs kpt_shape in the YAML");
        head.kpt_shape = kpt_shape;
        shown.push_back(Arg::ints({kpt_shape[0], kpt_shape[1]}));
        arch.kpt_shape = kpt_shape;
      }
      shown.push_back(Arg::integer(head.reg_max));
      shown.push_back(Arg::boolean(head.end2end));
      shown.push_back(Arg::ints(in_channels));
      Arg list;
      list.kind = Arg::Kind::kList;
      list.list = shown;
      row.args = repr(list);
      row.repeats = 1;
      row.stride = in_strides.front();
      arch.nc = head.nc;
      arch.strides = in_strides;
      net.head = Head(head);
      net.rows.push_back(row);
      break;
    }
    if (index + 1 == rows.size())
      throw ModelError(path + ": the last row must be a head (Detect, Pose or Pose26)");

    int64_t c_out = in_channels.front();
    switch (entry.role) {
      case Role::kBase:
      case Role::kRepeat: {
        if (row.from.size() != 1) throw ModelError(where + ": " + row.module + " takes one input");
        if (args.empty() || args[0].kind != Arg::Kind::kInt)
          throw ModelError(where + ": the first argument of " + row.module +
                           " is its output width");
        c_out = make_divisible(
            static_cast<double>(std::min(args[0].i, arch.max_channels)) * arch.width, 8);
        args[0] = Arg::integer(c_out);
        args.insert(args.begin(), Arg::integer(in_channels.front()));
        if (entry.role == Role::kRepeat) {
          args.insert(args.begin() + 2, Arg::integer(repeats));
          repeats = 1;
          // C3k2 at m/l/x always uses C3k blocks.
          if (row.module == "C3k2" && (scale == "m" || scale == "l" || scale == "x")) {
            while (args.size() < 4) args.push_back(Arg::none());
            args[3] = Arg::boolean(true);
          }
        }
        break;
      }
      case Role::kConcat:
        c_out = std::accumulate(in_channels.begin(), in_channels.end(), int64_t{0});
        if (std::adjacent_find(in_strides.begin(), in_strides.end(), std::not_equal_to<>()) !=
            in_strides.end())
          throw ModelError(where + ": Concat inputs have different strides (" +
                           join(
                               [&] {
                                 std::vector<std::string> s;
                                 for (auto v : in_strides) s.push_back(std::to_string(v));
                                 return s;
                               }(),
                               ", ") +
                           ")");
        break;
      case Role::kUpsample:
      case Role::kHead:
        if (row.from.size() != 1) throw ModelError(where + ": " + row.module + " takes one input");
        break;
    }
    RowArgs resolved(args, where);
    int64_t stride = in_strides.front();
    torch::nn::AnyModule module;
    if (repeats == 1) {
      module = entry.make(resolved);
      stride *= entry.stride(resolved);
    } else {
      if (entry.role != Role::kBase || in_channels.front() != c_out)
        throw ModelError(where + ": repeating " + row.module +
                         " needs equal input and output widths");
      Chain chain;
      for (int64_t i = 0; i < repeats; ++i) {
        chain->push_back(entry.make(resolved));
        stride *= entry.stride(resolved);
      }
      module = torch::nn::AnyModule(chain);
    }
    if (entry.role == Role::kUpsample) {
      const int64_t factor = upsample_factor(resolved);
      if (stride % factor != 0)
        throw ModelError(where + ": cannot upsample a stride-" + std::to_string(stride) +
                         " map by " + std::to_string(factor));
      stride /= factor;
    }
    Arg shown;
    shown.kind = Arg::Kind::kList;
    shown.list = args;
    row.args = repr(shown);
    row.repeats = static_cast<int>(repeats);
    row.out_channels = c_out;
    row.stride = stride;
    channels.push_back(c_out);
    strides.push_back(stride);
    net.rows.push_back(row);
    net.layers.push_back(std::move(module));
  }
  if (!net.head) throw ModelError(path + ": no head row (Detect, Pose or Pose26)");
  return net;
}

}  // namespace detrain::model
