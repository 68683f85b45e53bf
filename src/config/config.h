// Resolving an experiment: struct defaults (identical to configs/default.yaml, which is
// generated from them) <- an experiment YAML (which may name a `base:` chain) <- command-line
// `section.key=value` overrides. The result is frozen, printed as a table, saved as args.yaml
// and hashed. Errors are ConfigError with the file/key/value and a fix (closest valid key).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "config/experiment.h"

namespace detrain::config {

struct ResolvedConfig {
  Experiment experiment;
  // "train.epochs" -> where its value came from: "default", a config file path, or "override".
  std::map<std::string, std::string> origin;
  // Config files read, the most basic first.
  std::vector<std::string> files;
  // 16 hex digits identifying the resolved values (not their origins).
  std::string hash;
};

// `config_file` may be empty (defaults only). Overrides are "section.key=value" with YAML
// values ("3", "true", "[1, 2]", "models/yolo11.yaml"). Throws ConfigError.
ResolvedConfig resolve(const std::string& config_file, const std::vector<std::string>& overrides);

// Applies more overrides to an already resolved config (re-validates and re-hashes).
void apply_overrides(ResolvedConfig& resolved, const std::vector<std::string>& overrides);

// Range/choice checks and cross-field rules; throws ConfigError naming the key.
// `origin` (ResolvedConfig::origin) names the file or override a bad value came from.
void validate(const Experiment& experiment, const std::map<std::string, std::string>& origin = {});

// YAML text of every field in canonical order. With docs: a header and a comment per field
// (the form of configs/default.yaml).
std::string dump_yaml(const Experiment& experiment, bool with_docs);

// The resolved-config table printed at start and by `detrain config show`: every key with
// `all`, else only those whose value differs from the default (and a line saying so).
std::string table(const ResolvedConfig& resolved, bool all = true);

std::string hash_of(const Experiment& experiment);

// "section.key: old -> new" for every field that differs (resume with --force lists these).
std::vector<std::string> diff(const Experiment& before, const Experiment& after);

// Every valid "section.key", canonical order.
std::vector<std::string> all_keys();

// Every "section.key" whose key is `key` ("epochs" -> {"train.epochs"}), canonical order.
std::vector<std::string> keys_named(const std::string& key);

// Writes args.yaml (atomically): the resolved values and a comment with the hash.
void save_args_yaml(const ResolvedConfig& resolved, const std::string& path);

// Text form of one field's current value ("3", "true", "[1, 2]").
std::string value_text(const FieldRef& field);

}  // namespace detrain::config
