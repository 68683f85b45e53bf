// See predict_sources.h.
#include "tasks/predict_sources.h"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>

#include "common/errors.h"

namespace detrain::tasks {

namespace fs = std::filesystem;

namespace {

// The name of a listed file under the folder it was listed from, as listed: lexical, so that a
// symbolic link (a data set's linked images) keeps its own name instead of its target's path.
std::string name_under(const fs::path& file, const fs::path& folder) {
  const fs::path name = file.lexically_normal().lexically_relative(folder.lexically_normal());
  return name.empty() ? file.filename().string() : name.string();
}

std::string lower_extension(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
  return ext;
}

bool is_image(const fs::path& p) {
  const std::string ext = lower_extension(p);
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".bmp";
}

bool is_video(const fs::path& p) {
  const std::string ext = lower_extension(p);
  for (const char* v : {".mp4", ".avi", ".mov", ".mkv", ".webm", ".m4v", ".mpg", ".mpeg", ".wmv"})
    if (ext == v) return true;
  return false;
}

bool has_glob(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

}  // namespace

std::vector<SourceImage> source_images(const std::string& source, bool recursive) {
  std::vector<SourceImage> images;
  std::error_code ec;
  if (is_video(source))
    throw DataError("--source " + source +
                    ": video files are not supported (detrain reads images); extract the frames "
                    "first, e.g. ffmpeg -i " +
                    source + " frames/%06d.jpg, and pass frames/");
  if (has_glob(fs::path(source).filename().string()) && !fs::exists(source, ec)) {
    // "dir/*.jpg": the pattern matches file names in one directory (recursive: below it too).
    const fs::path dir =
        fs::path(source).parent_path().empty() ? fs::path(".") : fs::path(source).parent_path();
    const std::string pattern = fs::path(source).filename().string();
    if (!fs::is_directory(dir, ec))
      throw IoError("--source " + source + ": folder " + dir.string() + " does not exist");
    auto add = [&](const fs::directory_entry& e) {
      if (e.is_regular_file() && ::fnmatch(pattern.c_str(), e.path().filename().c_str(), 0) == 0 &&
          is_image(e.path()))
        images.push_back({e.path().string(), name_under(e.path(), dir)});
    };
    if (recursive)
      for (const auto& e : fs::recursive_directory_iterator(dir)) add(e);
    else
      for (const auto& e : fs::directory_iterator(dir)) add(e);
    if (images.empty())
      throw DataError("--source " + source + " matches no .jpg, .jpeg, .png or .bmp image");
  } else if (!fs::exists(source, ec)) {
    throw IoError("--source " + source +
                  " does not exist; pass an image file, a directory or a pattern (\"dir/*.jpg\")");
  } else if (!fs::is_directory(source, ec)) {
    return {{source, fs::path(source).filename().string()}};
  } else {
    auto add = [&](const fs::directory_entry& e) {
      if (e.is_regular_file() && is_image(e.path()))
        images.push_back({e.path().string(), name_under(e.path(), source)});
    };
    if (recursive)
      for (const auto& e : fs::recursive_directory_iterator(source)) add(e);
    else
      for (const auto& e : fs::directory_iterator(source)) add(e);
    if (images.empty())
      throw DataError(source + " holds no .jpg, .jpeg, .png or .bmp images" +
                      (recursive ? "" : " (--recursive also reads its sub-folders)"));
  }
  std::sort(images.begin(), images.end(),
            [](const SourceImage& a, const SourceImage& b) { return a.file < b.file; });
  return images;
}

std::string OutputNames::claim(const std::string& relative, const std::string& extension) {
  // Never outside the output folder, whatever the name: ".." and root parts are dropped.
  fs::path inside;
  for (const auto& part : fs::path(relative).relative_path())
    if (part != ".." && part != ".") inside /= part;
  if (inside.empty()) inside = "image";
  fs::path base = fs::path(out_dir_) / inside;
  if (!extension.empty()) base.replace_extension(extension);
  const std::string ext = base.extension().string();
  const fs::path stem = base.parent_path() / base.stem();
  std::error_code ec;
  std::string candidate = base.string();
  for (int n = 2; taken_.count(candidate) || fs::exists(candidate, ec); ++n)
    candidate = stem.string() + "_" + std::to_string(n) + ext;
  taken_.insert(candidate);
  return candidate;
}

std::vector<std::string> OutputNames::claim_together(const std::vector<std::string>& names) {
  std::error_code ec;
  for (int n = 1;; ++n) {
    std::vector<std::string> paths;
    bool free = true;
    for (const auto& name : names) {
      const fs::path base = fs::path(out_dir_) / name;
      paths.push_back(n == 1 ? base.string()
                             : (base.parent_path() / base.stem()).string() + "_" +
                                   std::to_string(n) + base.extension().string());
      free = free && !taken_.count(paths.back()) && !fs::exists(paths.back(), ec);
    }
    if (!free) continue;
    taken_.insert(paths.begin(), paths.end());
    return paths;
  }
}

}  // namespace detrain::tasks
