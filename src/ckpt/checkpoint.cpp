// Checkpoint files; see checkpoint.h. The container is LibTorch's archive (a zip), written
// through an ostream into write_file_atomic. Named groups are stored as one names string plus
// one tensor list (no key per tensor, so names may hold any character but '\n'), and a
// checksum over every name and tensor byte catches corruption that the zip layer lets through.
#include "ckpt/checkpoint.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <mutex>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/strings.h"
#include "common/version.h"
#include "compat/torch_compat.h"

namespace detrain::ckpt {
namespace {

constexpr const char* kFormatName = "detrain-checkpoint";
constexpr int64_t kFormatVersion = 1;

// 64-bit multiply-xorshift hash over 8-byte words (tail bytes padded), chained across calls.
// Not common/hash64.h: its values are part of the file format. Every checkpoint stores its
// checksum, verified on load, and arch_hash (content_hash), compared with the YAML of the model
// being resumed or initialised; so this hash must stay as long as format version 1 files are
// read. It also frames each piece by its length, where Hash64 hashes the concatenation.
class Hasher {
 public:
  void bytes(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      word(w);
    }
    uint64_t tail = 0;
    if (n > i) std::memcpy(&tail, p + i, n - i);
    word(tail ^ (static_cast<uint64_t>(n) << 56));
  }
  void text(std::string_view s) { bytes(s.data(), s.size()); }
  std::string hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(finish(state_)));
    return buf;
  }

 private:
  static uint64_t finish(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
  }
  void word(uint64_t w) {
    state_ = (state_ ^ finish(w + 0x9e3779b97f4a7c15ULL)) * 0x100000001b3ULL;
  }
  uint64_t state_ = 0xcbf29ce484222325ULL;
};

std::string shape_text(const std::vector<int64_t>& shape) {
  std::vector<std::string> parts;
  for (int64_t v : shape) parts.push_back(std::to_string(v));
  return "[" + join(parts, ", ") + "]";
}

[[noreturn]] void corrupt(const std::string& path, const std::string& what) {
  throw ModelError(
      "checkpoint " + path + " is truncated or corrupt (" + what +
      "); use another checkpoint: to resume an earlier copy of last.ckpt or a "
      "weights/epochN.ckpt (train.save_period), to validate or predict weights/best.ckpt");
}

torch::Tensor cpu_contiguous(const torch::Tensor& t, const std::string& name) {
  TORCH_CHECK(t.defined(), "checkpoint: tensor '", name, "' is undefined");
  return t.detach().to(torch::kCPU).contiguous();
}

class Writer {
 public:
  explicit Writer(torch::serialize::OutputArchive& archive) : archive_(archive) {}

  void tensors(const std::string& key, const NamedTensors& named) {
    std::vector<std::string> names;
    c10::List<at::Tensor> list;
    for (const auto& [name, tensor] : named) {
      TORCH_CHECK(name.find('\n') == std::string::npos, "checkpoint: name with a newline");
      names.push_back(name);
      list.push_back(cpu_contiguous(tensor, name));
    }
    // Hash in the order the reader sees things: the names entry, then each tensor.
    text(key + "_names", join(names, "\n"));
    for (size_t i = 0; i < names.size(); ++i) {
      const torch::Tensor t = list.get(i);  // [...] any shape, CPU contiguous
      hash_.text(names[i]);
      hash_.bytes(t.data_ptr(), t.numel() * t.element_size());
    }
    archive_.write(key + "_tensors", c10::IValue(list));
  }
  void doubles(const std::string& key, const std::map<std::string, double>& values) {
    NamedTensors named;
    for (const auto& [name, v] : values)
      named.emplace_back(name, torch::tensor({v}, torch::kDouble));
    tensors(key, named);
  }
  void ints(const std::string& key, const std::map<std::string, int64_t>& values) {
    NamedTensors named;
    for (const auto& [name, v] : values) named.emplace_back(name, torch::tensor({v}, torch::kLong));
    tensors(key, named);
  }
  void text(const std::string& key, const std::string& value) {
    hash_.text(key);
    hash_.text(value);
    archive_.write(key, c10::IValue(value));
  }
  std::string checksum() const { return hash_.hex(); }

 private:
  torch::serialize::OutputArchive& archive_;
  Hasher hash_;
};

class Reader {
 public:
  Reader(torch::serialize::InputArchive& archive, std::string path)
      : archive_(archive), path_(std::move(path)) {}

  NamedTensors tensors(const std::string& key) {
    const std::string joined = text(key + "_names");
    c10::IValue value;
    if (!archive_.try_read(key + "_tensors", value) || !value.isTensorList())
      corrupt(path_, "entry '" + key + "' is missing");
    const auto list = value.toTensorList();
    const std::vector<std::string> names =
        joined.empty() ? std::vector<std::string>{} : split(joined, '\n');
    if (names.size() != list.size()) corrupt(path_, "entry '" + key + "' is incomplete");
    NamedTensors out;
    for (size_t i = 0; i < names.size(); ++i) {
      torch::Tensor t = list.get(i).contiguous();  // [...] any shape
      hash_.text(names[i]);
      hash_.bytes(t.data_ptr(), t.numel() * t.element_size());
      out.emplace_back(names[i], t);
    }
    return out;
  }
  std::map<std::string, double> doubles(const std::string& key) {
    std::map<std::string, double> out;
    for (const auto& [name, t] : tensors(key)) out[name] = scalar(t, name).item<double>();
    return out;
  }
  std::map<std::string, int64_t> ints(const std::string& key) {
    std::map<std::string, int64_t> out;
    for (const auto& [name, t] : tensors(key)) out[name] = scalar(t, name).item<int64_t>();
    return out;
  }
  std::string text(const std::string& key) {
    c10::IValue value;
    if (!archive_.try_read(key, value) || !value.isString())
      corrupt(path_, "entry '" + key + "' is missing");
    const std::string s = value.toStringRef();
    hash_.text(key);
    hash_.text(s);
    return s;
  }
  std::string checksum() const { return hash_.hex(); }

 private:
  torch::Tensor scalar(const torch::Tensor& t, const std::string& name) {
    if (t.numel() != 1) corrupt(path_, "value '" + name + "' is not a scalar");
    return t;
  }
  torch::serialize::InputArchive& archive_;
  std::string path_;
  Hasher hash_;
};

std::map<std::string, int64_t> position_words(const SchedulePosition& p) {
  return {{"epoch", p.epoch},
          {"iter_in_epoch", p.iter_in_epoch},
          {"batches_per_epoch", p.batches_per_epoch},
          {"optimizer_steps", p.optimizer_steps},
          {"last_step_ni", p.last_step_ni},
          {"ema_updates", p.ema_updates},
          {"bad_steps", p.bad_steps},
          {"finished", p.finished ? 1 : 0}};
}

SchedulePosition position_from(const std::map<std::string, int64_t>& words,
                               const std::string& path) {
  auto get = [&](const char* key) {
    auto it = words.find(key);
    if (it == words.end()) corrupt(path, std::string("schedule value '") + key + "' is missing");
    return it->second;
  };
  SchedulePosition p;
  p.epoch = get("epoch");
  p.iter_in_epoch = get("iter_in_epoch");
  p.batches_per_epoch = get("batches_per_epoch");
  p.optimizer_steps = get("optimizer_steps");
  p.last_step_ni = get("last_step_ni");
  p.ema_updates = get("ema_updates");
  p.bad_steps = get("bad_steps");
  p.finished = get("finished") != 0;
  return p;
}

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

bool starts_like_zip(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4;
}

}  // namespace

std::string ArchIdentity::describe() const {
  std::string s = arch_file.empty() ? "<unnamed architecture>" : arch_file;
  s += " (scale " + (scale.empty() ? std::string("?") : scale) + ", " + std::to_string(nc) +
       " classes";
  if (!kpt_shape.empty()) s += ", keypoints " + shape_text(kpt_shape);
  return s + ", arch " + arch_hash + ")";
}

std::string content_hash(std::string_view text) {
  Hasher h;
  h.text(text);
  return h.hex();
}

void save_checkpoint(const std::string& path, const Checkpoint& c) {
  torch::serialize::OutputArchive archive;
  Writer w(archive);
  w.text("format", kFormatName);
  w.ints("format_version", {{"version", kFormatVersion}});
  w.text("detrain_version", std::string(version_string()) + " (" + git_describe() + ")");
  w.text("created_utc", utc_now());

  w.text("arch_file", c.arch.arch_file);
  w.text("arch_hash", c.arch.arch_hash);
  w.text("arch_scale", c.arch.scale);
  w.ints("arch_nc", {{"nc", c.arch.nc}});
  w.tensors("arch_kpt_shape",
            {{"kpt_shape",
              torch::tensor(c.arch.kpt_shape.empty() ? std::vector<int64_t>{} : c.arch.kpt_shape,
                            torch::kLong)}});

  w.tensors("model", c.model);
  w.tensors("ema", c.ema);
  w.text("optimizer_kind", c.optimizer.kind);
  w.tensors("optimizer", c.optimizer.tensors);
  w.doubles("optimizer_scalars", c.optimizer.scalars);
  w.ints("position", position_words(c.position));

  NamedTensors rng;
  for (const auto& [name, state] : c.rng_streams) {
    auto words = torch::empty({4}, torch::kLong);
    std::memcpy(words.data_ptr<int64_t>(), state.data(), sizeof(uint64_t) * 4);
    rng.emplace_back(name, words);
  }
  w.tensors("rng", rng);
  w.tensors("generators", NamedTensors(c.generator_states.begin(), c.generator_states.end()));
  w.ints("loader", c.loader_position);

  w.text("config_yaml", c.config_yaml);
  w.text("config_hash", c.config_hash);
  w.text("metrics_json", c.metrics_json);
  w.doubles("best", {{"fitness", c.best_fitness}, {"epoch", static_cast<double>(c.best_epoch)}});
  w.tensors("extra", c.extra_tensors);
  w.doubles("extra_scalars", c.extra_scalars);

  archive.write("checksum", c10::IValue(w.checksum()));
  write_file_atomic(path, [&](std::ostream& out) { archive.save_to(out); });
}

Checkpoint load_checkpoint(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw IoError("checkpoint " + path + " not found: " + std::strerror(errno) +
                  " (pass a file such as runs/train/weights/last.ckpt)");
  if (!S_ISREG(st.st_mode)) throw IoError("checkpoint " + path + " is not a regular file");
  if (!starts_like_zip(path))
    throw ModelError(path +
                     " is not a detrain checkpoint (expected a file written by detrain "
                     "train, e.g. runs/train/weights/last.ckpt)");

  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const c10::Error& e) {
    corrupt(path, "the archive cannot be read");
  }
  Checkpoint c;
  try {
    Reader r(archive, path);
    c10::IValue format;
    if (!archive.try_read("format", format) || !format.isString() ||
        format.toStringRef() != kFormatName)
      throw ModelError(path +
                       " is not a detrain checkpoint (a zip/TorchScript archive without "
                       "detrain's header)");
    r.text("format");
    const int64_t version = r.ints("format_version").at("version");
    if (version != kFormatVersion)
      throw ModelError("checkpoint " + path + " has format version " + std::to_string(version) +
                       "; this detrain reads version " + std::to_string(kFormatVersion));
    c.detrain_version = r.text("detrain_version");
    c.created_utc = r.text("created_utc");

    c.arch.arch_file = r.text("arch_file");
    c.arch.arch_hash = r.text("arch_hash");
    c.arch.scale = r.text("arch_scale");
    c.arch.nc = r.ints("arch_nc").at("nc");
    for (const auto& [name, t] : r.tensors("arch_kpt_shape"))
      for (int64_t i = 0; i < t.numel(); ++i) c.arch.kpt_shape.push_back(t[i].item<int64_t>());

    c.model = r.tensors("model");
    c.ema = r.tensors("ema");
    c.optimizer.kind = r.text("optimizer_kind");
    c.optimizer.tensors = r.tensors("optimizer");
    c.optimizer.scalars = r.doubles("optimizer_scalars");
    c.position = position_from(r.ints("position"), path);

    for (const auto& [name, t] : r.tensors("rng")) {
      if (t.scalar_type() != torch::kLong || t.numel() != 4)
        corrupt(path, "RNG stream '" + name + "' is malformed");
      Rng::State state;
      std::memcpy(state.data(), t.data_ptr<int64_t>(), sizeof(uint64_t) * 4);
      c.rng_streams[name] = state;
    }
    for (const auto& [name, t] : r.tensors("generators")) c.generator_states[name] = t;
    c.loader_position = r.ints("loader");

    c.config_yaml = r.text("config_yaml");
    c.config_hash = r.text("config_hash");
    c.metrics_json = r.text("metrics_json");
    const auto best = r.doubles("best");
    c.best_fitness = best.at("fitness");
    c.best_epoch = static_cast<int64_t>(best.at("epoch"));
    c.extra_tensors = r.tensors("extra");
    c.extra_scalars = r.doubles("extra_scalars");

    c10::IValue stored;
    if (!archive.try_read("checksum", stored) || !stored.isString()) corrupt(path, "no checksum");
    if (stored.toStringRef() != r.checksum()) corrupt(path, "checksum mismatch");
  } catch (const c10::Error&) {
    corrupt(path, "an entry cannot be decoded");
  } catch (const std::out_of_range&) {
    corrupt(path, "a required value is missing");
  }
  return c;
}

void check_architecture(const Checkpoint& checkpoint, const ArchIdentity& expected,
                        const std::string& path) {
  if (checkpoint.arch == expected) return;
  throw ModelError(
      "checkpoint " + path + " was trained for " + checkpoint.arch.describe() + ", not for " +
      expected.describe() +
      "; use a checkpoint of this architecture or set model.arch/model.scale to match");
}

std::map<std::string, torch::Tensor> capture_torch_generators() {
  std::map<std::string, torch::Tensor> out;
  auto capture = [&](at::Generator gen, const std::string& name) {
    std::lock_guard<std::mutex> lock(gen.mutex());
    out[name] = gen.get_state();
  };
  capture(at::globalContext().defaultGenerator(torch::kCPU), "torch_cpu");
  for (int i = 0; i < compat::cuda_device_count(); ++i)
    capture(at::globalContext().defaultGenerator(torch::Device(torch::kCUDA, i)),
            "torch_cuda:" + std::to_string(i));
  return out;
}

void restore_torch_generators(const std::map<std::string, torch::Tensor>& states) {
  auto restore = [&](at::Generator gen, const std::string& name) {
    auto it = states.find(name);
    if (it == states.end()) return;
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(it->second);
  };
  restore(at::globalContext().defaultGenerator(torch::kCPU), "torch_cpu");
  for (int i = 0; i < compat::cuda_device_count(); ++i)
    restore(at::globalContext().defaultGenerator(torch::Device(torch::kCUDA, i)),
            "torch_cuda:" + std::to_string(i));
}

}  // namespace detrain::ckpt
