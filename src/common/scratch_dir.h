// A private temporary folder for a command's scratch files (benchmark runs, generated inputs):
// created fresh under the system temp dir with a unique name, removed with everything in it
// when the object dies, unless keep() was called so that a failure's logs survive for the user.
#pragma once

#include <string>

namespace detrain {

class ScratchDir {
 public:
  // <temp dir>/<prefix>XXXXXX (mkdtemp); throws IoError when it cannot be created.
  explicit ScratchDir(const std::string& prefix);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Leaves the folder in place at destruction (its path is then the caller's to report).
  void keep() { keep_ = true; }

 private:
  std::string path_;
  bool keep_ = false;
};

}  // namespace detrain
