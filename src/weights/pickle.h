// A Python pickle read as data: an interpreter for the opcodes of protocols 0-5 that builds
// plain values (numbers, strings, lists, dicts, sets) and, for every class or function the
// stream names, an inert Object holding that name, its arguments and its state. Nothing the
// stream names is ever looked up or called, so a hostile file can only fail to parse (the
// reason `torch.load` of an untrusted `.pt` is dangerous and this is not). The few callables
// torch.save streams need to mean something (OrderedDict, set, tensor and parameter rebuilds)
// are recognised by name. No LibTorch here: tensors stay references into the archive.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace detrain::weights {

// A torch.save persistent id: ('storage', torch.HalfStorage, '12', 'cpu', 4096).
struct StorageRef {
  std::string key;       // the archive's data/<key> record
  std::string type;      // "HalfStorage", "FloatStorage", ...
  std::string location;  // "cpu", "cuda:0"
  int64_t numel = 0;     // elements of `type`
};

// torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...), parameters included.
struct TensorRef {
  StorageRef storage;
  int64_t offset = 0;  // in elements
  std::vector<int64_t> sizes, strides;
};

struct Value {
  enum class Kind {
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kBytes,
    kList,
    kTuple,
    kDict,
    kSet,
    kGlobal,
    kObject,
    kStorage,
    kTensor
  };
  Kind kind = Kind::kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;                    // string, bytes, or a global's "module.name"
  std::vector<const Value*> items;  // list, tuple, set; an object's args
  std::vector<std::pair<const Value*, const Value*>> entries;  // dict; an object's SETITEMs
  const Value* type = nullptr;                                 // object: its class (a kGlobal)
  const Value* state = nullptr;  // object: what BUILD gave it (usually a dict)
  StorageRef storage;
  TensorRef tensor;

  bool is(Kind k) const { return kind == k; }
  // For a dict, or an object whose state is a dict: the value under string key `key`, else
  // nullptr.
  const Value* get(const std::string& key) const;
  // An object's class name ("ultralytics.nn.tasks.DetectionModel"), else "".
  std::string class_name() const;
  // "dict", "int", "ultralytics.nn.tasks.DetectionModel": for messages.
  std::string describe() const;
};

// Every value of one stream; they reference each other (cycles allowed), so they are owned
// here and freed together.
struct Pickle {
  std::deque<Value> values;
  const Value* root = nullptr;
};

// Which "module.name" globals a stream may name; any other stops the read with a PickleError
// naming it (a file of another program is told apart from a damaged one).
using GlobalFilter = std::function<bool(const std::string& module, const std::string& name)>;

struct PickleError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A global the filter refused; `global` is its "module.name".
struct PickleRefused : PickleError {
  PickleRefused(const std::string& message, std::string name)
      : PickleError(message), global(std::move(name)) {}
  std::string global;
};

// Throws PickleError ("opcode 0x.. at byte N: ...") on any malformed, truncated or refused
// input; never anything else, whatever the bytes.
Pickle read_pickle(const std::string& bytes, const GlobalFilter& allow);

}  // namespace detrain::weights
