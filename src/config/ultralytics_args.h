// Ultralytics 8.4.190's command-line arguments (`yolo train epochs=3 imgsz=320 optimizer=SGD
// device=0`) as detrain overrides. One table (ultralytics_args.cpp) holds every argument of
// 8.4.190's cfg/default.yaml with either the detrain key it becomes (and how its value spellings
// translate) or the reason detrain has none; the translation, the checks in
// tests/config/test_ultralytics_args.cpp and docs/ultralytics-args.md all read that one table,
// so they cannot disagree. No LibTorch: the CLI translates before anything heavy starts.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace detrain::config {

// What Ultralytics arguments become for one command.
struct TranslatedArgs {
  std::vector<std::string> overrides;  // detrain `section.key=value` overrides, in order
  // The arguments the command reads itself, not through the config (predict's source=,
  // save_txt=, save=, name=, exist_ok=): Ultralytics name -> value spelled the detrain way
  // (True -> true); the last given wins. None for an argument whose default is None leaves it
  // out (the command's default).
  std::map<std::string, std::string> own;
};

// Translates `args` for `command` ("train", "val", "predict" or "export"), in order:
// - a dotted key (`train.precision=fp32`, anything containing '.') passes through unchanged;
// - `model=` and `data=` pass through unchanged: the caller translates them (model=X.yaml,
//   X.safetensors, yolo26n, a checkpoint; data=X.yaml) because that needs files and model names
//   this module does not know;
// - an argument `command` reads itself goes to `own` (see TranslatedArgs);
// - any other Ultralytics argument becomes `section.key=value` with its value spelled the
//   detrain way (True -> true, optimizer=SGD -> sgd, device=0 -> cuda:0, cache=True -> ram,
//   None -> detrain's default where None means Ultralytics' default); a bare boolean argument
//   (`cos_lr`) means True, as in Ultralytics.
// Throws ConfigError (one line, naming the argument) for an argument detrain has no equivalent
// for ("`<key>` (Ultralytics) is not supported by detrain: <reason>"), for one that would change
// nothing in `command` (`epochs` on predict: Ultralytics ignores it silently, detrain says so),
// for a value detrain cannot honour (optimizer=Adam, device=mps, batch=-1) and for an unknown
// key (with the closest Ultralytics argument or detrain key as a hint).
TranslatedArgs translate_ultralytics_args(const std::vector<std::string>& args,
                                          const std::string& command);

// docs/ultralytics-args.md: a short introduction and the table (Ultralytics argument | default
// in 8.4.190 | detrain key | note), rendered from the table so the page cannot drift.
std::string ultralytics_args_markdown();

// A read-only view of one table row, for the tests that check the table against detrain's keys.
struct UltralyticsArgInfo {
  std::string name;           // the Ultralytics argument, "epochs"
  std::string default_value;  // its 8.4.190 default as the command line spells it, "None" if unset
  // Each detrain key it becomes and the commands it applies to: {"data.batch", {"train"}}.
  std::vector<std::pair<std::string, std::vector<std::string>>> targets;
  bool caller_translates = false;  // model, data
  // The commands that read the argument themselves (TranslatedArgs::own): {"predict"} for
  // source=, and the option it stands for there ("-s/--source") or what it sets ("its folder
  // name").
  std::vector<std::string> own_commands;
  std::string own_option;
  std::string note;  // the translation's rules, or why detrain has no key
};

std::vector<UltralyticsArgInfo> ultralytics_arg_table();

}  // namespace detrain::config
