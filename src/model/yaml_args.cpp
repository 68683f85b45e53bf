// YAML row arguments; see yaml_args.h.
#include "model/yaml_args.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include "common/strings.h"

namespace detrain::model {

namespace {

bool is_integer_text(const std::string& s) {
  if (s.empty()) return false;
  size_t start = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  return start < s.size() && std::all_of(s.begin() + static_cast<long>(start), s.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c));
         });
}

}  // namespace

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

int64_t RowArgs::integer(size_t i, int64_t fallback) const {
  if (!has(i)) return fallback;
  const auto& a = args_[i];
  if (a.kind == Arg::Kind::kInt) return a.i;
  if (a.kind == Arg::Kind::kBool) return a.b ? 1 : 0;
  throw fail(i, "an integer");
}

double RowArgs::real(size_t i, double fallback) const {
  if (!has(i)) return fallback;
  const auto& a = args_[i];
  if (a.kind == Arg::Kind::kFloat) return a.f;
  if (a.kind == Arg::Kind::kInt) return static_cast<double>(a.i);
  throw fail(i, "a number");
}

bool RowArgs::flag(size_t i, bool fallback) const {
  if (!has(i)) return fallback;
  const auto& a = args_[i];
  if (a.kind == Arg::Kind::kBool) return a.b;
  if (a.kind == Arg::Kind::kInt) return a.i != 0;
  throw fail(i, "True or False");
}

std::pair<int64_t, int64_t> RowArgs::pair(size_t i, std::pair<int64_t, int64_t> fallback) const {
  if (!has(i)) return fallback;
  const auto& a = args_[i];
  if (a.kind == Arg::Kind::kInt) return {a.i, a.i};
  if (a.kind == Arg::Kind::kList && a.list.size() == 2 && a.list[0].kind == Arg::Kind::kInt &&
      a.list[1].kind == Arg::Kind::kInt)
    return {a.list[0].i, a.list[1].i};
  throw fail(i, "an integer or a pair of integers");
}

std::string RowArgs::text(size_t i, const std::string& fallback) const {
  if (!has(i)) return fallback;
  if (args_[i].kind == Arg::Kind::kString) return args_[i].s;
  throw fail(i, "a string");
}

int64_t RowArgs::integer_in(size_t i, const char* name, int64_t fallback, int64_t lo, int64_t hi,
                            bool odd) const {
  const int64_t v = integer(i, fallback);
  if (v < lo || v > hi || (odd && v % 2 == 0))
    throw out_of_range(
        name, std::to_string(v),
        (odd ? "odd values " : "") + std::to_string(lo) + " to " + std::to_string(hi));
  return v;
}

double RowArgs::real_in(size_t i, const char* name, double fallback, double lo, double hi) const {
  const double v = real(i, fallback);
  if (!(v > lo && v <= hi))  // NaN fails too
    throw out_of_range(name, has(i) ? repr(args_[i]) : repr(Arg{}),
                       "above " + repr(Arg::real(lo)) + " up to " + repr(Arg::real(hi)));
  return v;
}

ModelError RowArgs::out_of_range(const std::string& name, const std::string& value,
                                 const std::string& allowed) const {
  return ModelError(where_ + ": " + name + " is " + value + "; allowed " + allowed);
}

ModelError RowArgs::fail(size_t i, const std::string& expected) const {
  return ModelError(where_ + ": argument " + std::to_string(i + 1) + " is " + repr(args_[i]) +
                    ", expected " + expected);
}

ModelError RowArgs::fail(const std::string& message) const {
  return ModelError(where_ + ": " + message);
}

Arg to_arg(const YAML::Node& node, const std::map<std::string, Arg>& symbols,
           const std::string& where) {
  if (node.IsNull()) return Arg::none();
  if (node.IsSequence()) {
    std::vector<Arg> items;
    for (const auto& item : node) items.push_back(to_arg(item, symbols, where));
    return Arg::items(std::move(items));
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

}  // namespace detrain::model
