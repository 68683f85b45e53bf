// See split_image_check.h. The cache is text: a first line naming the format and the key, then
// one "<index>\t<problem>" line per dropped image.
#include "data/split_image_check.h"

#include <spdlog/fmt/fmt.h>
#include <sys/stat.h>

#include <filesystem>
#include <sstream>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/hash64.h"
#include "data/image_check.h"
#include "data/scan_parallel.h"

namespace detrain::data {

namespace {

constexpr const char* kMagic = "detrain-image-check v1";

// Hash of every file's path, size and modification time, in order.
uint64_t files_key(const std::vector<std::string>& files) {
  std::vector<int64_t> stamps(2 * files.size(), -1);
  scan_parallel(files.size(), [&](size_t i) {
    struct stat st {};
    if (::stat(files[i].c_str(), &st) != 0) return;
    stamps[2 * i] = static_cast<int64_t>(st.st_size);
    stamps[2 * i + 1] = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  });
  Hash64 hash(0x1c4ec);
  for (size_t i = 0; i < files.size(); ++i) {
    hash.update(files[i].data(), files[i].size() + 1);  // with its terminator: unambiguous
    hash.update(&stamps[2 * i], 2 * sizeof(int64_t));
  }
  return hash.digest();
}

bool read_cache(const std::string& path, const std::string& header, size_t n,
                std::vector<std::string>& problems) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const IoError&) {
    return false;
  }
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != header) return false;
  std::vector<std::string> read(n);
  while (std::getline(in, line)) {
    const size_t tab = line.find('\t');
    size_t index = n;
    try {
      index = std::stoul(line.substr(0, tab));
    } catch (const std::exception&) {
    }
    if (tab == std::string::npos || index >= n) return false;
    read[index] = line.substr(tab + 1);
  }
  problems = std::move(read);
  return true;
}

}  // namespace

SplitImageCheck check_split_images(const std::vector<std::string>& files,
                                   const std::string& cache_file) {
  SplitImageCheck out;
  std::string header;
  if (!cache_file.empty()) {
    header = fmt::format("{} {:016x} {}", kMagic, files_key(files), files.size());
    if (read_cache(cache_file, header, files.size(), out.problems)) {
      out.cache = "read";
      return out;
    }
  }
  out.problems.assign(files.size(), "");
  scan_parallel(files.size(),
                [&](size_t i) { out.problems[i] = check_image_file(files[i]).problem; });
  if (cache_file.empty()) return out;
  std::string text = header + "\n";
  for (size_t i = 0; i < files.size(); ++i)
    if (!out.problems[i].empty()) text += fmt::format("{}\t{}\n", i, out.problems[i]);
  try {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(cache_file).parent_path(), ec);
    write_file_atomic(cache_file, text);
    out.cache = "written";
  } catch (const IoError& e) {
    out.cache = std::string("not written: ") + e.what();
  }
  return out;
}

}  // namespace detrain::data
