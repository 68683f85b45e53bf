// What `detrain predict` reads and where it writes: the image files a --source names (a file,
// a directory, optionally recursive, or a glob pattern such as "photos/*.jpg"; video files are
// refused with a way out) and one output name per input that never overwrites a file, keeping
// the input's extension and sub-folder (a.jpg and a.png stay two files).
#pragma once

#include <set>
#include <string>
#include <vector>

namespace detrain::tasks {

struct SourceImage {
  std::string file;      // as found
  std::string relative;  // path under the source directory ("sub/a.jpg"; the name for a file)
};

// Sorted by path. Throws IoError (missing source), DataError (no images, a video file).
std::vector<SourceImage> source_images(const std::string& source, bool recursive);

// Output names under one directory: `relative` itself unless it exists already or was handed
// out before, else "a_2.jpg", "a_3.jpg", ...
class OutputNames {
 public:
  explicit OutputNames(std::string out_dir) : out_dir_(std::move(out_dir)) {}
  // The path (under out_dir) for `relative` with its extension replaced by `extension` when
  // given (".txt"); reserved so no later call returns it.
  std::string claim(const std::string& relative, const std::string& extension = "");
  // Paths under out_dir for files that belong together (predictions.json and images.json):
  // the names themselves when none exists, else all with the first of "_2", "_3", ... under
  // which none exists or was handed out; reserved like claim().
  std::vector<std::string> claim_together(const std::vector<std::string>& names);

 private:
  std::string out_dir_;
  std::set<std::string> taken_;
};

}  // namespace detrain::tasks
