// The images of a COCO JSON split checked whole at scan time (data/image_check.h), so that a
// truncated or garbage file is dropped from the records, and so from the ground truth that
// validation scores, before anything is trained or predicted on it. The answers are kept in a
// cache file keyed on every image's path, size and modification time: a later run stats the
// files, reads the answers and warns about the same files again. No LibTorch.
#pragma once

#include <string>
#include <vector>

namespace detrain::data {

struct SplitImageCheck {
  std::vector<std::string> problems;  // [n] "" for a whole image, else why it is dropped
  std::string cache;                  // "" (not used), "read", "written" or why not written
};

// Checks `files` (in parallel), through `cache_file` when it is not empty.
SplitImageCheck check_split_images(const std::vector<std::string>& files,
                                   const std::string& cache_file);

}  // namespace detrain::data
