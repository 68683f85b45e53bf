// One-line messages for command-line mistakes (exit 2): what CLI11 rejected, rewritten with a
// hint an Ultralytics user needs ("trian" -> train, "--epochs 3" -> train.epochs=3).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace detrain::cli {

// The message for a failed parse of `args` (argv without the program name), one line, no
// "detrain: error:" prefix (main adds it).
std::string usage_error_message(const CLI::App& root, const CLI::ParseError& error,
                                const std::vector<std::string>& args);

}  // namespace detrain::cli
