// A new folder <project>/<name> with the reference's numbering (Ultralytics' increment_path):
// <name>, else <name>2, <name>3, ... unless exist_ok. Training runs (run_dir.h), `detrain
// predict`'s runs/predict and `detrain val --plots`' runs/val are made this way. Creation uses
// mkdir (not create-if-missing), so two processes started at once never share a folder.
#pragma once

#include <string>

namespace detrain::report {

// Creates <project> if needed and the first free <project>/<name>, <name>2, ... up to
// <name>9999 (exist_ok: <project>/<name> itself, existing or not) and returns its path. Throws
// IoError with a fix when `name` is not a plain folder name, when the project cannot be created
// or written, or when every numbered name is taken.
std::string create_numbered_dir(const std::string& project, const std::string& name, bool exist_ok);

// The newest folder create_numbered_dir made for `name`: the existing <project>/<name>N with the
// largest N (<name> itself counting as 1), or "" when there is none.
std::string latest_numbered_dir(const std::string& project, const std::string& name);

}  // namespace detrain::report
