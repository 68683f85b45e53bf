// Usage-error messages; see usage_hints.h.
#include "usage_hints.h"

#include <algorithm>

#include "common/strings.h"
#include "config/config.h"

namespace detrain::cli {

namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  return names;
}

const CLI::App* find_subcommand(const CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (sub->get_name() == name) return sub;
  return nullptr;
}

// "--epochs" / "--epochs=3" -> {"epochs", "3"} (value empty when it is the next argument).
std::pair<std::string, std::string> option_parts(const std::string& arg) {
  const size_t start = arg.find_first_not_of('-');  // none in "--"
  std::string body = start == std::string::npos ? std::string() : arg.substr(start);
  std::string value;
  if (const auto eq = body.find('='); eq != std::string::npos) {
    value = body.substr(eq + 1);
    body = body.substr(0, eq);
  }
  std::replace(body.begin(), body.end(), '-', '_');
  return {body, value};
}

bool is_known_option(const CLI::App& app, const std::string& arg) {
  const std::string name = arg.substr(0, arg.find('='));
  for (const CLI::App* a = &app; a; a = a->get_parent())
    if (a->get_option_no_throw(name)) return true;
  return false;
}

std::vector<std::string> long_options(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options())
    for (const auto& n : o->get_lnames()) names.push_back("--" + n);
  return names;
}

// An option the command does not have: a config key typed the Ultralytics way, or a typo.
std::string unknown_option_message(const CLI::App& command, const std::string& arg,
                                   const std::string& next) {
  auto [key, value] = option_parts(arg);
  if (value.empty() && !next.empty() && next[0] != '-') value = next;
  const std::string shown = arg.substr(0, arg.find('='));
  const std::vector<std::string> keys = config::keys_named(key);
  if (keys.size() == 1)
    return "unknown option " + shown + "; config keys are given as section.key=value: " + keys[0] +
           "=" + (value.empty() ? "VALUE" : value);
  if (keys.size() > 1)
    return "unknown option " + shown + "; config keys are given as section.key=value, and " + key +
           " is in several sections: " + join(keys, ", ");
  const std::string hint = closest_match(shown, long_options(command));
  return "unknown option " + shown + (hint.empty() ? "" : "; did you mean " + hint + "?") +
         " (see detrain " + (command.get_parent() ? command.get_name() + " " : "") + "--help)";
}

}  // namespace

std::string usage_error_message(const CLI::App& root, const CLI::ParseError& error,
                                const std::vector<std::string>& args) {
  // The command chain ("data preview"), found the way CLI11 finds it: the first words that
  // are not options.
  const CLI::App* command = &root;
  std::string path;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!arg.empty() && arg[0] == '-') {
      if (!is_known_option(*command, arg))
        return unknown_option_message(*command, arg, i + 1 < args.size() ? args[i + 1] : "");
      continue;
    }
    const CLI::App* sub = find_subcommand(*command, arg);
    if (sub) {
      command = sub;
      path += (path.empty() ? "" : " ") + arg;
      continue;
    }
    if (command == &root ||
        !command->get_subcommands([](const CLI::App*) { return true; }).empty()) {
      const auto names = subcommand_names(*command);
      const std::string hint = closest_match(arg, names);
      const std::string where = path.empty() ? "command" : path + " command";
      return "unknown " + where + " '" + arg + "'" +
             (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
             " (commands: " + join(names, ", ") + ")";
    }
    // A positional of a leaf command: an override. Options after it still get checked.
  }
  const std::string help = "see detrain " + (path.empty() ? std::string() : path + " ") + "--help";
  if (command == &root) return "no command given; " + help;
  return first_line(error.what()) + " (" + help + ")";
}

}  // namespace detrain::cli
