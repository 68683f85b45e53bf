// What the two executables' main() share (docs/architecture.md, "Two executables"): the root
// app and its global flags, registering command_table.h's commands, parsing with one-line usage
// errors, logging, and the one place that turns errors into a line on stderr and an exit code
// (ExitCode in src/common/errors.h). Nothing else in the project exits.
#pragma once

#include <CLI/CLI.hpp>
#include <exception>
#include <functional>
#include <list>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "common/errors.h"

namespace detrain::cli {

// One command this executable runs: the add_*_command function that registers it.
struct Registrar {
  const char* name;
  Command (*add)(CLI::App& root);
};

// A subcommand that takes every argument after it unparsed (its --help included) into
// `arguments`, which must outlive `parent`: how the front end registers what detrain-torch parses.
CLI::App* add_passthrough(CLI::App& parent, const std::string& name, const std::string& description,
                          std::vector<std::string>& arguments);

class Shell {
 public:
  // `version` renders what --version prints.
  explicit Shell(std::function<std::string()> version);

  // Registers command_table()'s commands in table order with the table's descriptions (set here
  // too, so a registrar's own text cannot differ): those in `own` through their registrar; with
  // `stub_others` every other one as a stub that takes any arguments unparsed and has an empty run
  // (the caller hands it on). Throws std::logic_error when a registrar is not in the table or
  // registers another name, or, without `stub_others`, when a table entry has no registrar.
  void register_commands(const std::vector<Registrar>& own, bool stub_others);

  // Parses argv. nullopt: a command was given (parsed() says which); otherwise the exit code,
  // after printing what was asked (--help, --version) or the one-line usage error.
  std::optional<int> parse(int argc, char** argv);

  // The command that was parsed (after parse() returned nullopt).
  const Command& parsed() const;

  // The console logger at the level -v / -q asked for.
  void start_logging() const;

 private:
  CLI::App app_;
  int verbose_ = 0;
  bool quiet_ = false;
  bool fault_internal_ = false;  // --fault-internal (tests): the command throws a std::logic_error
  std::vector<Command> commands_;
  std::list<std::vector<std::string>> stub_arguments_;  // unread: detrain-torch parses them
};

// Runs `body` and returns its exit code; maps what it throws to an exit code with one line on
// stderr: an Error by its code, anything else as internal (1), described by `describe` when it
// returns a non-empty text for it (LibTorch's c10::Error, whose what() has a backtrace).
int run_mapping_errors(const std::function<int()>& body,
                       const std::function<std::string(const std::exception&)>& describe = {});

// Prints the one line for `code` and returns the exit code: "detrain: error: <message>", or
// "detrain: <message>" for a stop the user asked for (kInterrupted: not an error).
int report(ExitCode code, const std::string& message);

}  // namespace detrain::cli
