// YAML <-> typed field conversion; see field_value.h. Scalars are parsed here (not through
// yaml-cpp's as<T>) so that "1e-4" is a valid double but not an integer, and every failure
// names the key.
#include "config/field_value.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "common/errors.h"
#include "common/strings.h"

namespace detrain::config {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

[[noreturn]] void fail(const FieldRef& f, const std::string& value, const std::string& origin,
                       const std::string& what) {
  throw ConfigError("config: " + f.name() + " = '" + value + "' (" + origin + "): " + what);
}

std::string scalar_text(const YAML::Node& node) { return node.IsNull() ? "" : node.Scalar(); }

bool parse_bool(const FieldRef& f, const std::string& text, const std::string& origin) {
  const std::string t = lower(trim(text));
  if (t == "true" || t == "yes" || t == "on") return true;
  if (t == "false" || t == "no" || t == "off") return false;
  fail(f, text, origin, "expected true or false");
}

int64_t parse_int(const FieldRef& f, const std::string& text, const std::string& origin) {
  const std::string t = trim(text);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size())
    fail(f, text, origin, "expected an integer");
  return value;
}

double parse_double(const FieldRef& f, const std::string& text, const std::string& origin) {
  const std::string t = trim(text);
  char* end = nullptr;
  double value = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(value))
    fail(f, text, origin, "expected a finite number");
  return value;
}

// A list from a YAML sequence, or from a scalar holding comma-separated items ("1,2").
std::vector<std::string> list_items(const YAML::Node& node) {
  std::vector<std::string> items;
  if (node.IsSequence()) {
    for (const auto& element : node) items.push_back(scalar_text(element));
  } else if (!node.IsNull()) {
    const std::string text = trim(node.Scalar());
    if (!text.empty())
      for (const auto& part : split(text, ',')) items.push_back(trim(part));
  }
  return items;
}

std::string describe_node(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  if (node.IsNull()) return "";
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

}  // namespace

std::string format_double(double value) {
  // Like Python's repr: positional notation for 1e-4 <= |v| < 1e16, else scientific; always the
  // shortest text that reads back as the same double.
  char buf[400];
  const double magnitude = std::fabs(value);
  const bool positional = magnitude == 0.0 || (magnitude >= 1e-4 && magnitude < 1e16);
  auto [end, ec] =
      std::to_chars(buf, buf + sizeof buf, value,
                    positional ? std::chars_format::fixed : std::chars_format::scientific);
  std::string text(buf, end);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

void set_field(const FieldRef& f, const YAML::Node& node, const std::string& origin) {
  const bool is_list = std::holds_alternative<std::vector<int64_t>*>(f.pointer) ||
                       std::holds_alternative<std::vector<double>*>(f.pointer) ||
                       std::holds_alternative<std::vector<std::string>*>(f.pointer);
  if (!is_list && !node.IsScalar() && !node.IsNull())
    fail(f, describe_node(node), origin, "expected a single value, not a list or map");
  if (is_list && node.IsMap()) fail(f, describe_node(node), origin, "expected a list");

  std::visit(
      [&](auto* target) {
        using T = std::remove_pointer_t<decltype(target)>;
        if constexpr (std::is_same_v<T, bool>) {
          *target = parse_bool(f, scalar_text(node), origin);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          *target = parse_int(f, scalar_text(node), origin);
        } else if constexpr (std::is_same_v<T, double>) {
          *target = parse_double(f, scalar_text(node), origin);
        } else if constexpr (std::is_same_v<T, std::string>) {
          *target = scalar_text(node);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          T values;
          for (const auto& item : list_items(node)) values.push_back(parse_int(f, item, origin));
          *target = std::move(values);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          T values;
          for (const auto& item : list_items(node)) values.push_back(parse_double(f, item, origin));
          *target = std::move(values);
        } else {
          *target = list_items(node);
        }
      },
      f.pointer);
  check_constraint(f, origin);
}

void emit_value(YAML::Emitter& out, const FieldRef& f) {
  std::visit(
      [&](auto* value) {
        using T = std::remove_pointer_t<decltype(value)>;
        if constexpr (std::is_same_v<T, bool>) {
          out << (*value ? "true" : "false");
        } else if constexpr (std::is_same_v<T, int64_t>) {
          out << *value;
        } else if constexpr (std::is_same_v<T, double>) {
          out << format_double(*value);
        } else if constexpr (std::is_same_v<T, std::string>) {
          out << *value;
        } else {
          out << YAML::Flow << YAML::BeginSeq;
          for (const auto& element : *value) {
            if constexpr (std::is_same_v<T, std::vector<double>>)
              out << format_double(element);
            else
              out << element;
          }
          out << YAML::EndSeq;
        }
      },
      f.pointer);
}

void check_constraint(const FieldRef& f, const std::string& origin) {
  const Constraint& c = f.constraint;
  auto check_number = [&](double v, const std::string& text) {
    if ((c.min && v < *c.min) || (c.max && v > *c.max)) {
      auto bound = [](double b) {
        return b == std::floor(b) && std::fabs(b) < 1e15 ? std::to_string(static_cast<int64_t>(b))
                                                         : format_double(b);
      };
      std::string range = "[" + (c.min ? bound(*c.min) : std::string("-inf")) + ", " +
                          (c.max ? bound(*c.max) : std::string("inf")) + "]";
      fail(f, text, origin, "must be in " + range);
    }
  };
  auto check_choice = [&](const std::string& v) {
    if (c.choices.empty() || std::find(c.choices.begin(), c.choices.end(), v) != c.choices.end())
      return;
    std::string hint = closest_match(v, c.choices);
    fail(f, v, origin,
         "must be one of " + join(c.choices, ", ") +
             (hint.empty() ? std::string() : " (did you mean '" + hint + "'?)"));
  };
  auto check_size = [&](size_t n, const std::string& text) {
    if (c.list_size && n != *c.list_size)
      fail(f, text, origin, "expected " + std::to_string(*c.list_size) + " values");
  };
  std::visit(
      [&](auto* value) {
        using T = std::remove_pointer_t<decltype(value)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          check_number(static_cast<double>(*value), std::to_string(*value));
        } else if constexpr (std::is_same_v<T, double>) {
          check_number(*value, format_double(*value));
        } else if constexpr (std::is_same_v<T, std::string>) {
          check_choice(*value);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          check_size(value->size(), std::to_string(value->size()) + " values");
          for (auto v : *value) check_number(static_cast<double>(v), std::to_string(v));
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          check_size(value->size(), std::to_string(value->size()) + " values");
          for (auto v : *value) check_number(v, format_double(v));
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          check_size(value->size(), std::to_string(value->size()) + " values");
          for (const auto& v : *value) check_choice(v);
        }
      },
      f.pointer);
}

}  // namespace detrain::config
