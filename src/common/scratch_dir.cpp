// See scratch_dir.h.
#include "common/scratch_dir.h"

#include <stdlib.h>

#include <filesystem>

#include "common/errors.h"

namespace detrain {

ScratchDir::ScratchDir(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
  if (!mkdtemp(pattern.data())) throw IoError("cannot create a folder " + pattern);
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  if (keep_) return;
  std::error_code ec;  // a destructor must not throw; a leftover temp folder is harmless
  std::filesystem::remove_all(path_, ec);
}

}  // namespace detrain
