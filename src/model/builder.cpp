// The architecture YAML interpreter; see builder.h. The module table at the bottom is the only
// place that maps YAML module names to constructors.
#include "model/builder.h"

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <numeric>

#include "common/errors.h"
#include "common/paths.h"
#include "common/strings.h"
#include "config/model_options.h"
#include "model/row_checks.h"
#include "model/yaml_args.h"

namespace detrain::model {

namespace {

namespace fs = std::filesystem;

// ---- scale rules -----------------------------------------------------------------------------

int64_t make_divisible(double x, int64_t divisor) {
  return static_cast<int64_t>(std::ceil(x / static_cast<double>(divisor))) * divisor;
}

// Python's round(): halves go to the even neighbour.
int64_t python_round(double x) { return static_cast<int64_t>(std::nearbyint(x)); }

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
  // Throws ModelError when `make` could not build or run on these arguments (row_checks.h).
  void (*check)(const RowArgs&) = check_nothing;
  // Spatial stride of the module's output relative to its input.
  std::function<int64_t(const RowArgs&)> stride = [](const RowArgs&) { return int64_t{1}; };
};

ConvOptions conv_options(const RowArgs& a, size_t first, bool depthwise, int64_t c1, int64_t c2) {
  ConvOptions o;
  o.k = a.integer(first, 1);
  o.s = a.integer(first + 1, 1);
  if (depthwise) {
    o.g = std::gcd(c1, c2);
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
  if (!(scale >= 1 && scale <= 8) || scale != std::floor(scale))
    throw a.out_of_range("the upsampling factor", repr(a.all().size() > 1 ? a.all()[1] : Arg{}),
                         "a whole number 1 to 8");
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
                 check_conv, conv_stride};
    // DWConv(c1, c2, k=1, s=1, d=1, act=True): groups = gcd(c1, c2)
    t["DWConv"] = {Role::kBase,
                   [](const RowArgs& a) {
                     const int64_t c1 = a.integer(0, 0), c2 = a.integer(1, 0);
                     return torch::nn::AnyModule(Conv(c1, c2, conv_options(a, 2, true, c1, c2)));
                   },
                   check_dwconv, conv_stride};
    // Bottleneck(c1, c2, shortcut=True, g=1, k=(3, 3), e=0.5)
    t["Bottleneck"] = {Role::kBase,
                       [](const RowArgs& a) {
                         return torch::nn::AnyModule(Bottleneck(a.integer(0, 0), a.integer(1, 0),
                                                                a.flag(2, true), a.integer(3, 1),
                                                                a.pair(4, {3, 3}), a.real(5, 0.5)));
                       },
                       check_bottleneck};
    // C2f(c1, c2, n=1, shortcut=False, g=1, e=0.5)
    t["C2f"] = {Role::kRepeat,
                [](const RowArgs& a) {
                  return torch::nn::AnyModule(C2f(a.integer(0, 0), a.integer(1, 0), a.integer(2, 1),
                                                  C2fBlock::kC2f, a.flag(3, false), a.integer(4, 1),
                                                  a.real(5, 0.5)));
                },
                check_c2f};
    // C3(c1, c2, n=1, shortcut=True, g=1, e=0.5)
    t["C3"] = {Role::kRepeat,
               [](const RowArgs& a) {
                 return torch::nn::AnyModule(C3(a.integer(0, 0), a.integer(1, 0), a.integer(2, 1),
                                                a.flag(3, true), a.integer(4, 1), a.real(5, 0.5),
                                                std::pair<int64_t, int64_t>{1, 3}));
               },
               check_c2f};
    // C3k2(c1, c2, n=1, c3k=False, e=0.5, attn=False, g=1, shortcut=True)
    t["C3k2"] = {
        Role::kRepeat,
        [](const RowArgs& a) {
          const C2fBlock block = a.flag(5, false)   ? C2fBlock::kAttention
                                 : a.flag(3, false) ? C2fBlock::kC3k
                                                    : C2fBlock::kBottleneck;
          return torch::nn::AnyModule(C2f(a.integer(0, 0), a.integer(1, 0), a.integer(2, 1), block,
                                          a.flag(7, true), a.integer(6, 1), a.real(4, 0.5)));
        },
        check_c3k2};
    // SPPF(c1, c2, k=5, n=3, shortcut=False). A row of at most (c1, c2, k) (YOLO11, YOLOv8:
    // `[1024, 5]`) predates YOLO26's linear cv1 and gets SiLU after it, as the reference's
    // parse_model sets (8.4.190); YOLO26's `[1024, 5, 3, True]` stays linear.
    t["SPPF"] = {
        Role::kBase,
        [](const RowArgs& a) {
          return torch::nn::AnyModule(SPPF(a.integer(0, 0), a.integer(1, 0), a.integer(2, 5),
                                           a.integer(3, 3), a.flag(4, false), a.size() <= 3));
        },
        check_sppf};
    // C2PSA(c1, c2, n=1, e=0.5)
    t["C2PSA"] = {Role::kRepeat,
                  [](const RowArgs& a) {
                    if (a.integer(0, 0) != a.integer(1, 0))
                      throw a.fail("C2PSA needs equal input and output widths");
                    return torch::nn::AnyModule(
                        C2PSA(a.integer(0, 0), a.integer(1, 0), a.integer(2, 1), a.real(3, 0.5)));
                  },
                  check_c2psa};
    t["nn.Upsample"] = {
        Role::kUpsample,
        [](const RowArgs& a) { return torch::nn::AnyModule(Upsample(upsample_factor(a))); },
        [](const RowArgs& a) { upsample_factor(a); }};
    // Concat(dimension=1)
    t["Concat"] = {Role::kConcat,
                   [](const RowArgs& a) { return torch::nn::AnyModule(Concat(a.integer(0, 1))); },
                   check_concat};
    for (const char* head : {"Detect", "Pose", "Pose26"}) t[head] = {Role::kHead, nullptr};
    return t;
  }();
  return table;
}

// ---- reading the YAML ------------------------------------------------------------------------

YAML::Node load_yaml(const std::string& path) {
  if (!fs::exists(path)) throw ModelError("model YAML '" + path + "' does not exist");
  if (!fs::is_regular_file(path))
    throw ModelError("model YAML '" + path + "' is not a file (pass a file such as " +
                     "models/yolo26.yaml)");
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
    if (head.size() < 2 || !std::isalpha(static_cast<unsigned char>(head.back()))) continue;
    const std::string scale(1, head.back());
    stem = head.substr(0, head.size() - 1) + (dash == std::string::npos ? "" : stem.substr(dash));
    const std::string found = resolve_resource((p.parent_path() / (stem + ".yaml")).string());
    if (!fs::exists(found)) continue;
    if (std::string("nsmlx").find(scale) == std::string::npos)  // "yolo26q"
      throw ModelError("model '" + arch + "': unknown scale " + scale + " (n, s, m, l, x)");
    return {found, scale};
  }
  throw ModelError("model '" + arch + "' not found; available: " + join(available_models(), ", "));
}

namespace {

std::string repr_number(double v) { return repr(Arg::real(v)); }

std::string join_ints(const std::vector<int64_t>& values) {
  std::vector<std::string> parts;
  for (int64_t v : values) parts.push_back(std::to_string(v));
  return join(parts, ", ");
}

// The top-level keys: scale row, nc, reg_max, end2end, kpt_shape.
struct Header {
  ArchInfo arch;
  std::array<int64_t, 2> kpt_shape{17, 3};
  bool has_kpt_shape = false;  // in the YAML or the options
  int64_t cls_width = 0;       // BuildOptions::cls_width
};

// The top-level keys an architecture YAML may have; any other is a typo.
const std::vector<std::string>& known_keys() {
  static const std::vector<std::string> keys{"backbone",       "head",      "nc",
                                             "scales",         "kpt_shape", "reg_max",
                                             "depth_multiple", "end2end",   "width_multiple"};
  return keys;
}

void check_keys(const YAML::Node& root, const std::string& path) {
  for (const auto& item : root) {
    const std::string key = item.first.Scalar();
    const auto& keys = known_keys();
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
    const std::string hint = closest_match(key, keys);
    throw ModelError(path + ": unknown key '" + key + "'" +
                     (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
                     " (known: " + join(keys, ", ") + ")");
  }
}

Header read_header(const YAML::Node& root, const std::string& path, const BuildOptions& options,
                   const std::string& implied_scale) {
  check_keys(root, path);
  Header h;
  h.cls_width = options.cls_width;
  ArchInfo& arch = h.arch;
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
    std::vector<double> values;
    try {
      values = row.as<std::vector<double>>();
    } catch (const YAML::Exception&) {
    }
    if (values.size() != 3)
      throw ModelError(path + ": scale '" + scale + "' must be [depth, width, max_channels]");
    arch.depth = values[0];
    arch.width = values[1];
    if (!(values[2] >= 1 && values[2] <= kMaxRowChannels))
      throw ModelError(path + ": scale '" + scale + "' max_channels is " + repr_number(values[2]) +
                       "; allowed 1 to " + std::to_string(kMaxRowChannels));
    arch.max_channels = static_cast<int64_t>(values[2]);
  } else {
    // No scales table: the multiples are the scale, and there is no scale letter (the
    // reference's parse_model has scale None then, so C3k2 keeps its own c3k argument).
    arch.depth = read_scalar<double>(root, "depth_multiple", path, 1.0);
    arch.width = read_scalar<double>(root, "width_multiple", path, 1.0);
    scale.clear();
  }
  for (const auto& [name, value] : {std::pair{"depth", arch.depth}, std::pair{"width", arch.width}})
    if (!(value > 0 && value <= 4))
      throw ModelError(path + ": scale '" + scale + "' " + name + " multiple is " +
                       repr_number(value) + "; allowed above 0 up to 4");
  arch.scale = scale;
  if (root["nc"] && root["nc"].IsNull())
    throw ModelError(path + ": nc is null; give the number of classes (1 to " +
                     std::to_string(config::kMaxClasses) + ")");
  arch.nc = options.nc > 0 ? options.nc : read_scalar<int64_t>(root, "nc", path, 80);
  if (arch.nc <= 0 || arch.nc > config::kMaxClasses)
    throw ModelError(path + ": nc is " + std::to_string(arch.nc) + "; allowed 1 to " +
                     std::to_string(config::kMaxClasses));
  arch.reg_max = read_scalar<int64_t>(root, "reg_max", path, 16);
  if (arch.reg_max < 1 || arch.reg_max > 64)
    throw ModelError(path + ": reg_max is " + std::to_string(arch.reg_max) + "; allowed 1 to 64");
  arch.end2end = read_scalar<bool>(root, "end2end", path, false);
  if (root["kpt_shape"]) {
    const auto values = read_scalar<std::vector<int64_t>>(root, "kpt_shape", path, {});
    if (values.size() != 2 || values[0] < 1 || values[0] > 1000 ||
        (values[1] != 2 && values[1] != 3))
      throw ModelError(path + ": kpt_shape must be [keypoints, 2 or 3]");
    h.kpt_shape = {values[0], values[1]};
    h.has_kpt_shape = true;
  }
  if (options.kpt_shape) {
    h.kpt_shape = *options.kpt_shape;
    h.has_kpt_shape = true;
  }
  return h;
}

// A row's inputs: absolute indices (-1 = the image) and their widths and strides.
struct Inputs {
  std::vector<int64_t> channels, strides;
};

Inputs read_from(const YAML::Node& node, size_t index, const std::vector<int64_t>& channels,
                 const std::vector<int64_t>& strides, const std::string& where, LayerRow& row) {
  // -1 = previous layer, other negatives count back, non-negatives are absolute.
  std::vector<int64_t> from;
  try {
    from = node.IsSequence() ? node.as<std::vector<int64_t>>()
                             : std::vector<int64_t>{node.as<int64_t>()};
  } catch (const YAML::Exception&) {
    throw ModelError(where + ": 'from' must be an integer or a list of integers");
  }
  if (from.empty()) throw ModelError(where + ": 'from' is empty");
  row.from_text = node.IsSequence() ? "[" + join_ints(from) + "]" : std::to_string(from[0]);
  Inputs in;
  for (int64_t f : from) {
    const int64_t absolute = f < 0 ? static_cast<int64_t>(index) + f : f;
    if (absolute >= static_cast<int64_t>(index) || absolute < -1 || (absolute == -1 && f != -1))
      throw ModelError(where + ": 'from' " + std::to_string(f) + " does not name an earlier layer");
    row.from.push_back(static_cast<int>(absolute));
    in.channels.push_back(absolute < 0 ? 3 : channels[absolute]);
    in.strides.push_back(absolute < 0 ? 1 : strides[absolute]);
  }
  return in;
}

int64_t read_repeats(const YAML::Node& node, double depth, const std::string& where) {
  int64_t repeats = 1;
  try {
    repeats = node.as<int64_t>();
  } catch (const YAML::Exception&) {
    throw ModelError(where + ": repeats must be an integer");
  }
  if (repeats < 1 || repeats > kMaxRepeats)
    throw ModelError(where + ": repeats is " + std::to_string(repeats) + "; allowed 1 to " +
                     std::to_string(kMaxRepeats));
  return repeats > 1 ? std::max<int64_t>(python_round(static_cast<double>(repeats) * depth), 1) : 1;
}

// The head row: Detect / Pose / Pose26 on the given inputs.
Head make_head(const std::vector<Arg>& args, const Inputs& in, const Header& header, bool legacy,
               const std::string& where, LayerRow& row) {
  HeadOptions head;
  head.kind = head_kind(row.module);
  head.nc = RowArgs(args, where).integer(0, header.arch.nc);
  head.reg_max = header.arch.reg_max;
  head.end2end = header.arch.end2end;
  head.legacy = legacy;
  head.channels = in.channels;
  head.strides = in.strides;
  head.cls_width = header.cls_width;
  std::vector<Arg> shown{Arg::integer(head.nc)};
  if (head.pose()) {
    if (!header.has_kpt_shape)
      throw ModelError(where + ": a " + row.module + " head needs kpt_shape in the YAML");
    head.kpt_shape = header.kpt_shape;
    shown.push_back(Arg::ints({head.kpt_shape[0], head.kpt_shape[1]}));
  }
  shown.push_back(Arg::integer(head.reg_max));
  shown.push_back(Arg::boolean(head.end2end));
  shown.push_back(Arg::ints(in.channels));
  row.args = repr(Arg::items(shown));
  row.stride = in.strides.front();
  return Head(head);
}

// Base modules: the first argument is the output width, scaled; the input width goes first and
// repeat modules take their repeats as the third argument. Returns the output width.
int64_t scale_base_args(const ModuleEntry& entry, const LayerRow& row, const Inputs& in,
                        const ArchInfo& arch, const std::string& where, int64_t& repeats,
                        std::vector<Arg>& args) {
  if (row.from.size() != 1) throw ModelError(where + ": " + row.module + " takes one input");
  if (args.empty() || args[0].kind != Arg::Kind::kInt)
    throw ModelError(where + ": the first argument of " + row.module + " is its output width");
  if (args[0].i < 1 || args[0].i > kMaxRowChannels)
    throw ModelError(where + ": the output width is " + std::to_string(args[0].i) +
                     "; allowed 1 to " + std::to_string(kMaxRowChannels));
  const int64_t c_out =
      make_divisible(static_cast<double>(std::min(args[0].i, arch.max_channels)) * arch.width, 8);
  args[0] = Arg::integer(c_out);
  args.insert(args.begin(), Arg::integer(in.channels.front()));
  if (entry.role == Role::kRepeat) {
    args.insert(args.begin() + 2, Arg::integer(repeats));
    repeats = 1;
    // C3k2 at m/l/x always uses C3k blocks.
    if (row.module == "C3k2" && (arch.scale == "m" || arch.scale == "l" || arch.scale == "x")) {
      while (args.size() < 4) args.push_back(Arg::none());
      args[3] = Arg::boolean(true);
    }
  }
  return c_out;
}

const ModuleEntry& find_module(const std::string& name, const std::string& where) {
  const auto& table = module_table();
  const auto it = table.find(name);
  if (it != table.end()) return it->second;
  const std::string hint = closest_match(name, known_modules());
  throw ModelError(where + ": unknown module '" + name + "'" +
                   (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
                   " (known: " + join(known_modules(), ", ") + ")");
}

}  // namespace

namespace {
Network read_network(const BuildOptions& options, bool construct);
}  // namespace

Network build_network(const BuildOptions& options) { return read_network(options, true); }

Network check_network(const BuildOptions& options) { return read_network(options, false); }

namespace {

Network read_network(const BuildOptions& options, bool construct) {
  const auto [path, implied_scale] = resolve_arch(options.arch);
  const YAML::Node root = load_yaml(path);
  if (!root.IsMap()) throw ModelError(path + ": expected a mapping with backbone and head");
  const Header header = read_header(root, path, options, implied_scale);
  Network net;
  net.arch = header.arch;
  ArchInfo& arch = net.arch;

  const std::map<std::string, Arg> symbols{
      {"nc", Arg::integer(arch.nc)},
      {"kpt_shape", Arg::ints({header.kpt_shape[0], header.kpt_shape[1]})}};
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

  // First every row is read, checked and sized; only then is anything built, so a bad row
  // costs no allocation.
  struct Planned {
    const ModuleEntry* entry = nullptr;
    std::vector<Arg> args;  // resolved (c1, c2, ... for base modules)
    int64_t repeats = 1;
    Inputs in;  // the head's inputs
  };
  std::vector<Planned> plan;
  std::vector<int64_t> channels;  // output width per layer
  std::vector<int64_t> strides;   // output stride per layer
  for (size_t index = 0; index < rows.size(); ++index) {
    const auto& node = rows[index];
    const std::string where = path + " layer " + std::to_string(index);
    if (!node.IsSequence() || node.size() != 4)
      throw ModelError(where + ": a row is [from, repeats, module, args]");
    LayerRow row;
    row.index = static_cast<int>(index);
    row.module = node[2].IsScalar() ? node[2].Scalar() : std::string("<not a name>");
    const ModuleEntry& entry = find_module(row.module, where);
    const Inputs in = read_from(node[0], index, channels, strides, where, row);
    int64_t repeats = read_repeats(node[1], arch.depth, where);
    std::vector<Arg> args;
    if (node[3] && !node[3].IsNull()) {
      if (!node[3].IsSequence()) throw ModelError(where + ": args must be a list");
      for (const auto& a : node[3]) args.push_back(to_arg(a, symbols, where));
    }
    // Complaints name the row as written: "models/x.yaml layer 0 (Conv [64, 3, 0])".
    const std::string written = where + " (" + row.module + " " + repr(Arg::items(args)) + ")";

    const bool last = index + 1 == rows.size();
    if (entry.role == Role::kHead) {
      if (!last) throw ModelError(where + ": the head must be the last row");
      if (std::count(row.from.begin(), row.from.end(), -1) > 0)
        throw ModelError(where + ": the head takes earlier layers as inputs");
      check_head(RowArgs(args, written), header.arch.nc, in.channels.size());
      net.rows.push_back(row);
      plan.push_back({&entry, args, 1, in});
      break;
    }
    if (last) throw ModelError(path + ": the last row must be a head (Detect, Pose or Pose26)");

    int64_t c_out = in.channels.front();
    if (entry.role == Role::kBase || entry.role == Role::kRepeat) {
      c_out = scale_base_args(entry, row, in, arch, written, repeats, args);
    } else if (entry.role == Role::kConcat) {
      c_out = std::accumulate(in.channels.begin(), in.channels.end(), int64_t{0});
      if (c_out > kMaxRowChannels)
        throw ModelError(written + ": the concatenated width is " + std::to_string(c_out) +
                         "; allowed up to " + std::to_string(kMaxRowChannels));
      if (std::adjacent_find(in.strides.begin(), in.strides.end(), std::not_equal_to<>()) !=
          in.strides.end())
        throw ModelError(where + ": Concat inputs have different strides (" +
                         join_ints(in.strides) + ")");
    } else if (row.from.size() != 1) {
      throw ModelError(where + ": " + row.module + " takes one input");
    }
    const RowArgs resolved(args, written);
    entry.check(resolved);
    if (repeats > 1 && (entry.role != Role::kBase || in.channels.front() != c_out))
      throw ModelError(where + ": repeating " + row.module +
                       " needs equal input and output widths");
    int64_t stride = in.strides.front();
    for (int64_t i = 0; i < repeats; ++i) stride *= entry.stride(resolved);
    if (entry.role == Role::kUpsample) {
      const int64_t factor = upsample_factor(resolved);
      if (stride % factor != 0)
        throw ModelError(where + ": cannot upsample a stride-" + std::to_string(stride) +
                         " map by " + std::to_string(factor));
      stride /= factor;
    }
    // data.imgsz is only required to be a multiple of config::kMaxStride, so no output may be
    // coarser.
    if (stride > config::kMaxStride)
      throw ModelError(written + ": the total stride reaches " + std::to_string(stride) +
                       "; allowed up to " + std::to_string(config::kMaxStride) +
                       " (data.imgsz is a multiple of " + std::to_string(config::kMaxStride) + ")");
    row.args = repr(Arg::items(args));
    row.repeats = static_cast<int>(repeats);
    row.out_channels = c_out;
    row.stride = stride;
    channels.push_back(c_out);
    strides.push_back(stride);
    net.rows.push_back(row);
    plan.push_back({&entry, std::move(args), repeats, {}});
  }
  if (plan.empty() || plan.back().entry->role != Role::kHead)
    throw ModelError(path + ": no head row (Detect, Pose or Pose26)");
  if (!construct) return net;

  for (size_t index = 0; index < plan.size(); ++index) {
    const Planned& p = plan[index];
    const std::string where = path + " layer " + std::to_string(index);
    if (p.entry->role == Role::kHead) {
      net.head = make_head(p.args, p.in, header, legacy, where, net.rows[index]);
      arch.nc = net.head->options().nc;
      arch.strides = p.in.strides;
      if (net.head->options().pose()) arch.kpt_shape = header.kpt_shape;
      break;
    }
    const RowArgs resolved(p.args, where);
    if (p.repeats == 1) {
      net.layers.push_back(p.entry->make(resolved));
      continue;
    }
    // The reference's nn.Sequential of n identical modules.
    Chain chain;
    for (int64_t i = 0; i < p.repeats; ++i) chain->push_back(p.entry->make(resolved));
    net.layers.emplace_back(chain);
  }
  return net;
}

}  // namespace

}  // namespace detrain::model
