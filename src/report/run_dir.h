// The run directory runs/<name>: created with the reference's numbering (train, train2,
// train3, ... unless exist_ok), checked for writability up front so a bad location fails
// before any work, and the standard file names inside it. Creation uses mkdir (not
// create-if-missing), so two runs started at once never share a directory.
#pragma once

#include <string>

namespace detrain::report {

struct RunPaths {
  std::string dir;            // runs/<name>
  std::string args_yaml;      // resolved config
  std::string train_log;      // log file sink
  std::string metrics_jsonl;  // one line per logged step
  std::string results_csv;    // one row per epoch
  std::string results_png;    // curves of results.csv
  std::string weights_dir;    // weights/
  std::string last_ckpt;      // weights/last.ckpt
  std::string best_ckpt;      // weights/best.ckpt

  // <dir>/<name>, e.g. file("train_batch0.jpg"), file("predictions.json").
  std::string file(const std::string& name) const;
};

// The standard paths inside an existing or planned run directory (nothing is created).
RunPaths run_paths(const std::string& dir);

// What `--resume WHERE` names: WHERE itself when it is a directory, else the run directory of
// the checkpoint file WHERE (runs/<name>/weights/last.ckpt -> runs/<name>).
std::string resume_run_dir(const std::string& where);
// The checkpoint `--resume WHERE` continues from: <dir>/weights/last.ckpt for a directory,
// else WHERE.
std::string resume_checkpoint(const std::string& where);

// Creates <project>/<name> (or <project>/<name>N with the smallest N >= 2 that does not exist
// yet, unless exist_ok) and its weights/ folder. Throws IoError with a fix when the project
// directory cannot be created or written, or when every numbered name up to 9999 is taken.
RunPaths create_run_dir(const std::string& project, const std::string& name, bool exist_ok);

}  // namespace detrain::report
