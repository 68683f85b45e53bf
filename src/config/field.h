// The reflection protocol of the config system. Every option section is a plain struct with
// defaults and a `visit` member that names each field once, with a one-line doc and its
// allowed values. Loading, overrides, validation, the printed table, `config dump` and the
// hash are all generic loops over those fields, so a new option is one line in one struct.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace detrain::config {

// Allowed values of a field: an inclusive numeric range (for numbers and each list element)
// and/or a set of choices (for strings and each string-list element).
struct Constraint {
  std::optional<double> min;
  std::optional<double> max;
  std::vector<std::string> choices;
  std::optional<size_t> list_size;  // exact element count for lists

  static Constraint none() { return {}; }
  static Constraint range(double lo, double hi) { return {lo, hi, {}, {}}; }
  static Constraint at_least(double lo) { return {lo, std::nullopt, {}, {}}; }
  static Constraint one_of(std::initializer_list<const char*> values) {
    Constraint c;
    for (const char* v : values) c.choices.emplace_back(v);
    return c;
  }
  Constraint& sized(size_t n) {
    list_size = n;
    return *this;
  }
};

using FieldPointer = std::variant<bool*, int64_t*, double*, std::string*, std::vector<int64_t>*,
                                  std::vector<double>*, std::vector<std::string>*>;

// A type-erased handle to one field of one section ("train.epochs").
struct FieldRef {
  std::string section;
  std::string key;
  std::string doc;
  Constraint constraint;
  FieldPointer pointer;

  std::string name() const { return section + "." + key; }
};

// Collects FieldRefs from a section's `visit`.
class FieldCollector {
 public:
  FieldCollector(std::string section, std::vector<FieldRef>& out)
      : section_(std::move(section)), out_(out) {}

  template <class T>
  void operator()(const char* key, T& value, const char* doc,
                  Constraint constraint = Constraint::none()) {
    out_.push_back(FieldRef{section_, key, doc, std::move(constraint), FieldPointer{&value}});
  }

 private:
  std::string section_;
  std::vector<FieldRef>& out_;
};

}  // namespace detrain::config
