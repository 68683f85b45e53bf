// Conversion between YAML values and typed fields, with one-line errors that name the key,
// the value, where it came from and what is allowed.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "config/field.h"

namespace detrain::config {

// Sets `field` from a YAML node; `origin` ("configs/x.yaml" or "command line") goes into errors.
void set_field(const FieldRef& field, const YAML::Node& node, const std::string& origin);

// Emits the field's value into a YAML emitter (used by dumps and args.yaml).
void emit_value(YAML::Emitter& out, const FieldRef& field);

// Checks the field's current value against its constraint; throws ConfigError.
void check_constraint(const FieldRef& field, const std::string& origin);

// Shortest text that reads back as the same double, always with a '.' or exponent ("1.0").
std::string format_double(double value);

}  // namespace detrain::config
