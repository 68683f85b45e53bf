// The shared main() machinery; see cli_shell.h.
#include "cli_shell.h"

#include <iostream>
#include <stdexcept>

#include "command_table.h"
#include "common/log.h"
#include "usage_hints.h"

namespace detrain::cli {

namespace {

const Registrar* find_registrar(const std::vector<Registrar>& own, const std::string& name) {
  for (const Registrar& r : own)
    if (name == r.name) return &r;
  return nullptr;
}

bool in_table(const std::string& name) {
  for (const CommandEntry& entry : command_table())
    if (name == entry.name) return true;
  return false;
}

// A command of the other executable: listed in --help, its arguments kept unparsed (the other
// executable parses them, --help included) in `arguments`, whose positional also takes a "--".
Command add_stub(CLI::App& root, const CommandEntry& entry, std::vector<std::string>& arguments) {
  return {add_passthrough(root, entry.name, entry.description, arguments), nullptr};
}

}  // namespace

CLI::App* add_passthrough(CLI::App& parent, const std::string& name, const std::string& description,
                          std::vector<std::string>& arguments) {
  CLI::App* stub = parent.add_subcommand(name, description);
  stub->prefix_command();
  stub->set_help_flag();
  stub->fallthrough(false);  // `train --help` stays the stub's, not the root's
  stub->add_option("arguments", arguments);
  return stub;
}

Shell::Shell(std::function<std::string()> version)
    : app_{"detrain: train and evaluate YOLO detectors and pose models", "detrain"} {
  app_.require_subcommand(1);
  app_.fallthrough();
  app_.add_flag("--verbose,-v", verbose_, "more log output (debug level)");
  app_.add_flag("--quiet,-q", quiet_, "warnings and errors only");
  app_.set_version_flag("--version", std::move(version));
  // Hidden (no group): makes the command fail as a bug would, for the exit-code test.
  app_.add_flag("--fault-internal", fault_internal_, "fail with an unexpected exception")
      ->group("");
}

void Shell::register_commands(const std::vector<Registrar>& own, bool stub_others) {
  for (const Registrar& r : own)
    if (!in_table(r.name))
      throw std::logic_error(std::string("command '") + r.name +
                             "' is not in apps/command_table.cpp");
  for (const CommandEntry& entry : command_table()) {
    const Registrar* r = find_registrar(own, entry.name);
    if (!r && !stub_others)
      throw std::logic_error(std::string("command '") + entry.name + "' has no registrar");
    if (!r) {
      commands_.push_back(add_stub(app_, entry, stub_arguments_.emplace_back()));
      continue;
    }
    Command command = r->add(app_);
    if (!command.app || command.app->get_name() != entry.name || !command.run)
      throw std::logic_error(std::string("the registrar of '") + entry.name +
                             "' registered another command");
    command.app->description(entry.description);
    commands_.push_back(std::move(command));
  }
}

std::optional<int> Shell::parse(int argc, char** argv) {
  try {
    app_.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" that succeed: CLI11 prints them.
    if (e.get_exit_code() == 0) return app_.exit(e);
    return report(ExitCode::kUsage,
                  usage_error_message(app_, e, std::vector<std::string>(argv + 1, argv + argc)));
  }
  for (Command& command : commands_) {
    if (!command.app->parsed()) continue;
    if (fault_internal_)
      command.run = []() -> int { throw std::logic_error("--fault-internal: an injected bug"); };
    return std::nullopt;
  }
  return report(ExitCode::kUsage, "no command given (see detrain --help)");
}

const Command& Shell::parsed() const {
  for (const Command& command : commands_)
    if (command.app->parsed()) return command;
  throw std::logic_error("Shell::parsed() before a successful parse()");
}

void Shell::start_logging() const {
  init_logging(LogOptions{quiet_ ? -1 : (verbose_ > 0 ? 1 : 0), 0});
}

int run_mapping_errors(const std::function<int()>& body,
                       const std::function<std::string(const std::exception&)>& describe) {
  try {
    return body();
  } catch (const Error& e) {
    return report(e.code(), e.what());
  } catch (const std::exception& e) {
    const std::string known = describe ? describe(e) : std::string();
    return report(ExitCode::kInternal, known.empty() ? std::string(e.what()) : known);
  }
}

int report(ExitCode code, const std::string& message) {
  // A stop the user asked for (Ctrl-C, SIGTERM, --max-iterations, the requeue signal) ends
  // with a resumable checkpoint: not an error, but still its own exit code (130, 75) for
  // scripts.
  const bool stopped = code == ExitCode::kInterrupted || code == ExitCode::kRequeued;
  std::cerr << (stopped ? "detrain: " : "detrain: error: ") << message
            << (code == ExitCode::kInternal ? " (an internal error: please report it)" : "")
            << "\n";
  return static_cast<int>(code);
}

}  // namespace detrain::cli
