// See pickle.h. The opcode meanings follow CPython's Lib/pickle.py and pickletools.py (the
// format's specification); every read is bounds-checked, so damage becomes a PickleError.
#include "weights/pickle.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace detrain::weights {

namespace {

using Kind = Value::Kind;

class Machine {
 public:
  Machine(const std::string& bytes, const GlobalFilter& allow) : in_(bytes), allow_(allow) {}

  Pickle run() {
    while (true) {
      if (pos_ >= in_.size()) fail("the stream ends before its STOP opcode (truncated)");
      op_pos_ = pos_;
      op_ = static_cast<uint8_t>(in_[pos_++]);
      if (op_ == '.') break;
      step();
    }
    if (stack_.size() != 1 || !marks_.empty()) fail("STOP with a malformed stack");
    out_.root = stack_.back();
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    char where[64];
    std::snprintf(where, sizeof where, "opcode 0x%02x at byte %zu: ", op_, op_pos_);
    throw PickleError(where + why);
  }

  // ---- reading the stream ----
  const char* take(uint64_t n) {
    if (n > in_.size() - pos_) fail("the stream ends inside an argument (truncated)");
    const char* p = in_.data() + pos_;
    pos_ += n;
    return p;
  }
  uint64_t le(int bytes) {
    const auto* p = reinterpret_cast<const unsigned char*>(take(bytes));
    uint64_t v = 0;
    for (int k = bytes - 1; k >= 0; --k) v = (v << 8) | p[k];
    return v;
  }
  std::string line() {
    const size_t end = in_.find('\n', pos_);
    if (end == std::string::npos) fail("the stream ends inside a text argument (truncated)");
    std::string s = in_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }
  std::string sized(uint64_t n) {
    const char* p = take(n);
    return std::string(p, n);
  }

  // ---- values ----
  Value* make(Kind k) {
    out_.values.emplace_back();
    Value* v = &out_.values.back();
    v->kind = k;
    return v;
  }
  Value* integer(int64_t i) {
    Value* v = make(Kind::kInt);
    v->i = i;
    return v;
  }
  Value* text(Kind k, std::string s) {
    Value* v = make(k);
    v->s = std::move(s);
    return v;
  }
  void push(Value* v) { stack_.push_back(v); }
  Value* pop() {
    if (stack_.size() <= floor()) fail("the stack is empty");
    Value* v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Value* top() {
    if (stack_.size() <= floor()) fail("the stack is empty");
    return stack_.back();
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  // The values above the last MARK, which is removed.
  std::vector<Value*> pop_mark() {
    if (marks_.empty()) fail("no MARK on the stack");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Value*> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  Value* sequence(Kind k, const std::vector<Value*>& items) {
    Value* v = make(k);
    v->items.assign(items.begin(), items.end());
    return v;
  }
  void memo_put(uint64_t key) { memo_[key] = top(); }
  void memo_get(uint64_t key) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) fail("memo key " + std::to_string(key) + " was never stored");
    push(it->second);
  }

  int64_t signed_le(const std::string& bytes) {
    if (bytes.empty()) return 0;
    if (bytes.size() > 8) {
      // Larger only when the extra bytes are sign extension.
      const unsigned char sign = (static_cast<unsigned char>(bytes[7]) & 0x80) ? 0xff : 0;
      for (size_t k = 8; k < bytes.size(); ++k)
        if (static_cast<unsigned char>(bytes[k]) != sign) fail("an integer wider than 64 bits");
    }
    const size_t n = std::min<size_t>(bytes.size(), 8);
    uint64_t v = 0;
    for (size_t k = n; k-- > 0;) v = (v << 8) | static_cast<unsigned char>(bytes[k]);
    if (n < 8 && (static_cast<unsigned char>(bytes[n - 1]) & 0x80)) v |= ~uint64_t{0} << (8 * n);
    return static_cast<int64_t>(v);
  }
  int64_t parse_int(std::string s) {
    if (!s.empty() && s.back() == 'L') s.pop_back();
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || errno == ERANGE) fail("a malformed integer '" + s + "'");
    return v;
  }
  // Protocol 0 STRING: a Python repr, quoted; the escapes repr writes.
  std::string unquote(const std::string& s) {
    if (s.size() < 2 || (s[0] != '\'' && s[0] != '"') || s.back() != s[0])
      fail("a STRING argument without quotes");
    std::string out;
    for (size_t k = 1; k + 1 < s.size(); ++k) {
      if (s[k] != '\\' || k + 2 >= s.size()) {
        out += s[k];
        continue;
      }
      const char e = s[++k];
      if (e == 'n')
        out += '\n';
      else if (e == 't')
        out += '\t';
      else if (e == 'r')
        out += '\r';
      else if (e == 'x' && k + 2 < s.size() - 1) {
        out += static_cast<char>(std::strtol(s.substr(k + 1, 2).c_str(), nullptr, 16));
        k += 2;
      } else
        out += e;
    }
    return out;
  }

  Value* global(std::string module, const std::string& name) {
    // Python 2 spellings protocol-2 streams still use.
    if (module == "__builtin__") module = "builtins";
    if (module == "copy_reg") module = "copyreg";
    const std::string full = module + "." + name;
    if (!allow_(module, name))
      throw PickleRefused("the stream names " + full + ", which is not allowed here", full);
    return text(Kind::kGlobal, full);
  }

  Value* object(Value* type, std::vector<Value*> args) {
    Value* v = make(Kind::kObject);
    v->type = type;
    v->items.assign(args.begin(), args.end());
    return v;
  }

  static const Value* arg(const Value* tuple, size_t k) {
    return tuple->is(Kind::kTuple) && k < tuple->items.size() ? tuple->items[k] : nullptr;
  }
  std::vector<int64_t> ints(const Value* v, const char* what) {
    if (!v || !(v->is(Kind::kTuple) || v->is(Kind::kList)))
      fail(std::string(what) + " is not a tuple");
    std::vector<int64_t> out;
    for (const Value* x : v->items) {
      if (!x->is(Kind::kInt)) fail(std::string(what) + " holds a non-integer");
      out.push_back(x->i);
    }
    return out;
  }

  // The callables torch.save streams need; everything else stays an inert object.
  Value* reduce(Value* callable, Value* args) {
    if (!callable->is(Kind::kGlobal)) fail("REDUCE of a " + callable->describe() + ", not a class");
    if (!args->is(Kind::kTuple))
      fail("REDUCE arguments are a " + args->describe() + ", not a tuple");
    const std::string& f = callable->s;
    if (f == "collections.OrderedDict" || f == "builtins.dict") {
      Value* d = make(Kind::kDict);
      if (const Value* pairs = arg(args, 0))
        for (const Value* p : pairs->items)
          if (p->is(Kind::kTuple) && p->items.size() == 2)
            d->entries.emplace_back(p->items[0], p->items[1]);
      return d;
    }
    if (f == "builtins.set" || f == "builtins.frozenset") {
      Value* s = make(Kind::kSet);
      if (const Value* from = arg(args, 0)) s->items = from->items;
      return s;
    }
    if (f == "torch._utils._rebuild_tensor_v2" || f == "torch._utils._rebuild_tensor") {
      const Value* storage = arg(args, 0);
      const Value* offset = arg(args, 1);
      if (!storage || !storage->is(Kind::kStorage)) fail("a tensor rebuild without a storage");
      if (!offset || !offset->is(Kind::kInt)) fail("a tensor rebuild without an offset");
      Value* t = make(Kind::kTensor);
      t->tensor.storage = storage->storage;
      t->tensor.offset = offset->i;
      t->tensor.sizes = ints(arg(args, 2), "a tensor's size");
      t->tensor.strides = ints(arg(args, 3), "a tensor's stride");
      if (t->tensor.sizes.size() != t->tensor.strides.size())
        fail("a tensor whose size and stride differ in length");
      return t;
    }
    if (f == "torch._utils._rebuild_parameter" ||
        f == "torch._utils._rebuild_parameter_with_state") {
      Value* t = args->items.empty() ? nullptr : const_cast<Value*>(args->items[0]);
      if (!t || !t->is(Kind::kTensor)) fail("a parameter rebuild without a tensor");
      return t;
    }
    std::vector<Value*> items;
    for (const Value* a : args->items) items.push_back(const_cast<Value*>(a));
    if (f == "copyreg._reconstructor" && !items.empty() && items[0]->is(Kind::kGlobal))
      return object(items[0], {});
    return object(callable, std::move(items));
  }

  Value* persistent(Value* pid) {
    const Value* tag = arg(pid, 0);
    const Value* type = arg(pid, 1);
    const Value* key = arg(pid, 2);
    const Value* location = arg(pid, 3);
    const Value* numel = arg(pid, 4);
    if (!tag || !tag->is(Kind::kString) || tag->s != "storage" || !type ||
        !type->is(Kind::kGlobal) || !key || !key->is(Kind::kString) || !location ||
        !location->is(Kind::kString) || !numel || !numel->is(Kind::kInt) || numel->i < 0)
      fail("a persistent id that is not a torch storage ('storage', type, key, location, numel)");
    Value* s = make(Kind::kStorage);
    const auto dot = type->s.rfind('.');
    s->storage.type = type->s.substr(dot + 1);
    s->storage.key = key->s;
    s->storage.location = location->s;
    s->storage.numel = numel->i;
    return s;
  }

  void set_items(Value* target, const std::vector<Value*>& kv) {
    if (kv.size() % 2) fail("SETITEMS with an odd number of values");
    if (!target->is(Kind::kDict) && !target->is(Kind::kObject))
      fail("SETITEM on a " + target->describe());
    for (size_t k = 0; k < kv.size(); k += 2) target->entries.emplace_back(kv[k], kv[k + 1]);
  }
  void append(Value* target, const std::vector<Value*>& items) {
    if (!target->is(Kind::kList) && !target->is(Kind::kObject) && !target->is(Kind::kSet))
      fail("APPEND to a " + target->describe());
    target->items.insert(target->items.end(), items.begin(), items.end());
  }

  void step() {
    switch (op_) {
      case 0x80:
        take(1);
        return;  // PROTO
      case 0x95:
        take(8);
        return;  // FRAME: framing only
      case '(':
        marks_.push_back(stack_.size());
        return;
      case '0':
        pop();
        return;
      case '1':
        pop_mark();
        return;
      case '2':
        push(top());
        return;
      case 'N':
        push(make(Kind::kNone));
        return;
      case 0x88:
      case 0x89: {  // NEWTRUE, NEWFALSE
        Value* v = make(Kind::kBool);
        v->b = op_ == 0x88;
        push(v);
        return;
      }
      case 'I': {
        const std::string s = line();
        if (s == "00" || s == "01") {
          Value* v = make(Kind::kBool);
          v->b = s == "01";
          push(v);
        } else {
          push(integer(parse_int(s)));
        }
        return;
      }
      case 'L':
        push(integer(parse_int(line())));
        return;
      case 'J':
        push(integer(static_cast<int32_t>(le(4))));
        return;
      case 'K':
        push(integer(static_cast<int64_t>(le(1))));
        return;
      case 'M':
        push(integer(static_cast<int64_t>(le(2))));
        return;
      case 0x8a:
        push(integer(signed_le(sized(le(1)))));
        return;
      case 0x8b:
        push(integer(signed_le(sized(le(4)))));
        return;
      case 'F': {
        const std::string s = line();
        char* end = nullptr;
        const double d = std::strtod(s.c_str(), &end);
        if (s.empty() || *end != '\0') fail("a malformed float '" + s + "'");
        Value* v = make(Kind::kFloat);
        v->f = d;
        push(v);
        return;
      }
      case 'G': {
        uint64_t bits = 0;
        const auto* p = reinterpret_cast<const unsigned char*>(take(8));
        for (int k = 0; k < 8; ++k) bits = (bits << 8) | p[k];  // big-endian
        Value* v = make(Kind::kFloat);
        std::memcpy(&v->f, &bits, sizeof bits);
        push(v);
        return;
      }
      case 'S':
        push(text(Kind::kString, unquote(line())));
        return;
      case 'T':
        push(text(Kind::kString, sized(le(4))));
        return;
      case 'U':
        push(text(Kind::kString, sized(le(1))));
        return;
      case 'V':
        push(text(Kind::kString, line()));
        return;
      case 'X':
        push(text(Kind::kString, sized(le(4))));
        return;
      case 0x8c:
        push(text(Kind::kString, sized(le(1))));
        return;
      case 0x8d:
        push(text(Kind::kString, sized(le(8))));
        return;
      case 'B':
        push(text(Kind::kBytes, sized(le(4))));
        return;
      case 'C':
        push(text(Kind::kBytes, sized(le(1))));
        return;
      case 0x8e:
      case 0x96:
        push(text(Kind::kBytes, sized(le(8))));
        return;
      case ']':
        push(make(Kind::kList));
        return;
      case ')':
        push(make(Kind::kTuple));
        return;
      case '}':
        push(make(Kind::kDict));
        return;
      case 0x8f:
        push(make(Kind::kSet));
        return;
      case 'l':
        push(sequence(Kind::kList, pop_mark()));
        return;
      case 't':
        push(sequence(Kind::kTuple, pop_mark()));
        return;
      case 0x91:
        push(sequence(Kind::kSet, pop_mark()));
        return;
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        const size_t n = op_ - 0x84u;
        std::vector<Value*> items(n);
        for (size_t k = n; k-- > 0;) items[k] = pop();
        push(sequence(Kind::kTuple, items));
        return;
      }
      case 'd': {
        const auto kv = pop_mark();
        Value* d = make(Kind::kDict);
        set_items(d, kv);
        push(d);
        return;
      }
      case 'a': {
        Value* v = pop();
        append(top(), {v});
        return;
      }
      case 'e':
      case 0x90: {  // APPENDS, ADDITEMS
        const auto items = pop_mark();
        append(top(), items);
        return;
      }
      case 's': {
        Value* v = pop();
        Value* k = pop();
        set_items(top(), {k, v});
        return;
      }
      case 'u': {
        const auto kv = pop_mark();
        set_items(top(), kv);
        return;
      }
      case 'p':
        memo_put(static_cast<uint64_t>(parse_int(line())));
        return;
      case 'q':
        memo_put(le(1));
        return;
      case 'r':
        memo_put(le(4));
        return;
      case 0x94:
        memo_put(memo_.size());
        return;
      case 'g':
        memo_get(static_cast<uint64_t>(parse_int(line())));
        return;
      case 'h':
        memo_get(le(1));
        return;
      case 'j':
        memo_get(le(4));
        return;
      case 'c': {
        const std::string module = line();
        push(global(module, line()));
        return;
      }
      case 0x93: {
        Value* name = pop();
        Value* module = pop();
        if (!name->is(Kind::kString) || !module->is(Kind::kString))
          fail("STACK_GLOBAL of non-strings");
        push(global(module->s, name->s));
        return;
      }
      case 'R': {
        Value* args = pop();
        Value* callable = pop();
        push(reduce(callable, args));
        return;
      }
      case 0x81: {  // NEWOBJ
        Value* args = pop();
        Value* type = pop();
        if (!type->is(Kind::kGlobal)) fail("NEWOBJ of a " + type->describe());
        std::vector<Value*> items;
        for (const Value* a : args->items) items.push_back(const_cast<Value*>(a));
        push(object(type, items));
        return;
      }
      case 0x92: {  // NEWOBJ_EX
        pop();      // kwargs
        Value* args = pop();
        Value* type = pop();
        if (!type->is(Kind::kGlobal)) fail("NEWOBJ_EX of a " + type->describe());
        std::vector<Value*> items;
        for (const Value* a : args->items) items.push_back(const_cast<Value*>(a));
        push(object(type, items));
        return;
      }
      case 'i': {  // INST module name + marked args
        const std::string module = line();
        Value* type = global(module, line());
        push(object(type, pop_mark()));
        return;
      }
      case 'o': {  // OBJ: marked class + args
        auto items = pop_mark();
        if (items.empty() || !items[0]->is(Kind::kGlobal)) fail("OBJ without a class");
        Value* type = items[0];
        items.erase(items.begin());
        push(object(type, items));
        return;
      }
      case 'b': {
        Value* state = pop();
        Value* target = top();
        if (target->is(Kind::kObject)) {
          target->state = state;
        } else if (target->is(Kind::kDict) && state->is(Kind::kDict)) {
          target->entries.insert(target->entries.end(), state->entries.begin(),
                                 state->entries.end());
        }
        // Anything else (a tensor's hooks state): nothing a model file's data needs.
        return;
      }
      case 'Q':
        push(persistent(pop()));
        return;
      case 'P':
        fail("text persistent ids are not torch storages");
      case 0x82:
      case 0x83:
      case 0x84:
        fail("extension registry codes are not supported");
      case 0x97:
      case 0x98:
        fail("out-of-band buffers are not supported");
      default:
        fail("not a pickle opcode");
    }
  }

  const std::string& in_;
  const GlobalFilter& allow_;
  size_t pos_ = 0, op_pos_ = 0;
  uint8_t op_ = 0;
  std::vector<Value*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Value*> memo_;
  Pickle out_;
};

}  // namespace

const Value* Value::get(const std::string& key) const {
  const Value* d = this;
  if (is(Kind::kObject)) {
    d = state;
    // A (dict, slots) pair from __reduce_ex__ with __slots__: the dict part.
    if (d && d->is(Kind::kTuple) && !d->items.empty()) d = d->items[0];
  }
  if (!d || !d->is(Kind::kDict)) return nullptr;
  for (auto it = d->entries.rbegin(); it != d->entries.rend(); ++it)
    if (it->first->is(Kind::kString) && it->first->s == key) return it->second;
  return nullptr;
}

std::string Value::class_name() const {
  return is(Kind::kObject) && type ? type->s : std::string();
}

std::string Value::describe() const {
  switch (kind) {
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kBytes:
      return "bytes";
    case Kind::kList:
      return "list";
    case Kind::kTuple:
      return "tuple";
    case Kind::kDict:
      return "dict";
    case Kind::kSet:
      return "set";
    case Kind::kGlobal:
      return "global " + s;
    case Kind::kObject:
      return class_name();
    case Kind::kStorage:
      return "storage";
    case Kind::kTensor:
      return "tensor";
  }
  return "value";
}

Pickle read_pickle(const std::string& bytes, const GlobalFilter& allow) {
  return Machine(bytes, allow).run();
}

}  // namespace detrain::weights
