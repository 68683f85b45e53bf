// Arguments of one architecture-YAML row, typed the way the reference's parse_model types them
// (Python literals, with the symbols nc and kpt_shape resolved), printed the way Python prints
// them, and read back with the row named in every complaint. No LibTorch here.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.h"

namespace detrain::model {

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
  static Arg real(double v) {
    Arg a;
    a.kind = Kind::kFloat;
    a.f = v;
    return a;
  }
  static Arg boolean(bool v) {
    Arg a;
    a.kind = Kind::kBool;
    a.b = v;
    return a;
  }
  static Arg items(std::vector<Arg> values) {
    Arg a;
    a.kind = Kind::kList;
    a.list = std::move(values);
    return a;
  }
  static Arg ints(const std::vector<int64_t>& values) {
    std::vector<Arg> list;
    for (int64_t v : values) list.push_back(integer(v));
    return items(std::move(list));
  }
};

// Python's repr: None, True, 3, 0.25, 'nearest', [1, [2, 3]].
std::string repr(const Arg& a);

// YAML node -> Arg. Quoted scalars stay strings; `symbols` replace bare names (nc, kpt_shape);
// None/True/False and numbers are literals; lists recurse.
Arg to_arg(const YAML::Node& node, const std::map<std::string, Arg>& symbols,
           const std::string& where);

// Reading the arguments of one row, with the row named in every complaint.
class RowArgs {
 public:
  RowArgs(std::vector<Arg> args, std::string where)
      : args_(std::move(args)), where_(std::move(where)) {}

  size_t size() const { return args_.size(); }
  const std::vector<Arg>& all() const { return args_; }
  // Whether argument i exists and is not None.
  bool has(size_t i) const { return i < args_.size() && args_[i].kind != Arg::Kind::kNone; }

  // Argument i as a value, or `fallback` when absent / None; ModelError when of another type.
  int64_t integer(size_t i, int64_t fallback) const;
  double real(size_t i, double fallback) const;
  bool flag(size_t i, bool fallback) const;
  std::pair<int64_t, int64_t> pair(size_t i, std::pair<int64_t, int64_t> fallback) const;
  std::string text(size_t i, const std::string& fallback) const;

  // Argument i as an integer in [lo, hi] (odd only when `odd`), or `fallback` when absent;
  // otherwise a ModelError naming it (`name`) and its allowed range.
  int64_t integer_in(size_t i, const char* name, int64_t fallback, int64_t lo, int64_t hi,
                     bool odd = false) const;
  // Argument i as a number in (lo, hi], or `fallback` when absent; ModelError as above.
  double real_in(size_t i, const char* name, double fallback, double lo, double hi) const;
  // "<where>: <name> is <value>; allowed <allowed>".
  ModelError out_of_range(const std::string& name, const std::string& value,
                          const std::string& allowed) const;

  ModelError fail(size_t i, const std::string& expected) const;
  ModelError fail(const std::string& message) const;

 private:
  std::vector<Arg> args_;
  std::string where_;
};

}  // namespace detrain::model
