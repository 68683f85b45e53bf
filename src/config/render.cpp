// Text forms of a config: YAML dump (configs/default.yaml, args.yaml), the start-up table, the
// hash and diffs; see config.h.
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <sstream>

#include "common/atomic_file.h"
#include "common/hash64.h"
#include "config/config.h"
#include "config/field_value.h"

namespace detrain::config {

std::string value_text(const FieldRef& field) {
  YAML::Emitter out;
  emit_value(out, field);
  return out.c_str();
}

std::string dump_yaml(const Experiment& experiment, bool with_docs) {
  Experiment copy = experiment;
  const auto fields = fields_of(copy);
  std::ostringstream out;
  if (with_docs) {
    out << "# detrain configuration: every key with its default and what it does.\n"
           "# Generated from the option structs by `detrain config dump`; do not edit by hand\n"
           "# (a test fails when this file and the code drift apart). Experiments in configs/\n"
           "# name only what differs, optionally on top of a `base:` file.\n";
  }
  std::string section;
  for (const auto& f : fields) {
    if (f.section != section) {
      if (!section.empty() && with_docs) out << "\n";
      section = f.section;
      out << section << ":\n";
    }
    out << "  " << f.key << ": " << value_text(f);
    if (with_docs) out << "  # " << f.doc;
    out << "\n";
  }
  return out.str();
}

// Hash64 of the dump without docs, so comments never change it. Checkpoints store it and resume
// compares it; one hashed by an older build (FNV-1a) differs only in the hash, and resume then
// diffs the configurations themselves, which agree (train/resume.cpp).
std::string hash_of(const Experiment& experiment) {
  const std::string text = dump_yaml(experiment, false);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx",
                static_cast<unsigned long long>(hash64(text.data(), text.size())));
  return buf;
}

std::string table(const ResolvedConfig& resolved, bool all) {
  Experiment copy = resolved.experiment, defaults;
  const auto all_fields = fields_of(copy), default_fields = fields_of(defaults);
  std::vector<FieldRef> fields;
  for (size_t i = 0; i < all_fields.size(); ++i)
    if (all || value_text(all_fields[i]) != value_text(default_fields[i]))
      fields.push_back(all_fields[i]);
  size_t key_width = 3, value_width = 5;
  std::vector<std::string> values;
  for (const auto& f : fields) {
    values.push_back(value_text(f));
    key_width = std::max(key_width, f.name().size());
    value_width = std::max(value_width, std::min<size_t>(values.back().size(), 48));
  }
  std::ostringstream out;
  out << "config " << resolved.hash;
  for (const auto& file : resolved.files) out << "  " << file;
  out << "\n";
  if (!all)
    out << "  " << fields.size() << " of " << all_fields.size()
        << " keys differ from the defaults (every key: -v, or args.yaml)\n";
  char line[512];
  std::snprintf(line, sizeof line, "  %-*s  %-*s  %s\n", static_cast<int>(key_width), "key",
                static_cast<int>(value_width), "value", "from");
  out << line;
  for (size_t i = 0; i < fields.size(); ++i) {
    const std::string name = fields[i].name();
    auto it = resolved.origin.find(name);
    const std::string origin = it == resolved.origin.end() ? "default" : it->second;
    std::snprintf(line, sizeof line, "  %-*s  %-*s  %s\n", static_cast<int>(key_width),
                  name.c_str(), static_cast<int>(value_width), values[i].c_str(),
                  origin == "default" ? "" : origin.c_str());
    out << line;
  }
  return out.str();
}

std::vector<std::string> diff(const Experiment& before, const Experiment& after) {
  Experiment a = before, b = after;
  const auto fa = fields_of(a), fb = fields_of(b);
  std::vector<std::string> changes;
  for (size_t i = 0; i < fa.size(); ++i) {
    const std::string va = value_text(fa[i]), vb = value_text(fb[i]);
    if (va != vb) changes.push_back(fa[i].name() + ": " + va + " -> " + vb);
  }
  return changes;
}

void save_args_yaml(const ResolvedConfig& resolved, const std::string& path) {
  std::string text = "# Resolved detrain configuration, hash " + resolved.hash +
                     ". `detrain train --config " + path + "` repeats this run.\n" +
                     dump_yaml(resolved.experiment, false);
  write_file_atomic(path, text);
}

}  // namespace detrain::config
