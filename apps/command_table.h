// The top-level commands, in the order `detrain --help` lists them, each with its one-line
// description. Both executables register exactly these (cli_shell.h): the LibTorch-free front end
// `detrain` runs some and hands the others to `detrain-torch`, which runs them all, so the two
// --help pages list the same commands with the same words.
#pragma once

#include <vector>

namespace detrain::cli {

struct CommandEntry {
  const char* name;
  const char* description;
};

const std::vector<CommandEntry>& command_table();

// The description of `name` in the table (the one each add_*_command registers); throws
// std::logic_error for a name that is not in it.
const char* command_description(const char* name);

}  // namespace detrain::cli
