// Atomic writes via temp file + fsync + rename; see atomic_file.h.
#include "common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "common/errors.h"

namespace detrain {
namespace fs = std::filesystem;

namespace {

std::string describe_errno(int err) {
  if (err == ENOSPC || err == EDQUOT) return "disk full (free some space and retry)";
  return std::strerror(err);
}

std::string temp_name_for(const std::string& path) {
  std::random_device rd;
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd() % 1000000);
}

void fsync_path(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) return;  // best effort for directories on file systems that refuse O_RDONLY
  ::fsync(fd);
  ::close(fd);
}

void commit(const std::string& tmp, const std::string& path) {
  fsync_path(tmp, O_RDONLY);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    throw IoError("cannot move " + tmp + " to " + path + ": " + describe_errno(err));
  }
  auto parent = fs::path(path).parent_path();
  fsync_path(parent.empty() ? "." : parent.string(), O_RDONLY | O_DIRECTORY);
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view bytes) {
  write_file_atomic(path, [&](std::ostream& out) { out.write(bytes.data(), bytes.size()); });
}

void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& writer) {
  const std::string tmp = temp_name_for(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      int err = errno;
      throw IoError("cannot write " + path + ": " + describe_errno(err) +
                    " (check that the directory exists and is writable)");
    }
    try {
      writer(out);
    } catch (...) {
      out.close();
      std::remove(tmp.c_str());
      throw;
    }
    out.flush();
    if (!out) {
      int err = errno;
      out.close();
      std::remove(tmp.c_str());
      throw IoError("cannot write " + path + ": " + describe_errno(err ? err : EIO));
    }
  }
  commit(tmp, path);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void ensure_writable_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw IoError("cannot create directory " + dir + ": " + ec.message());
  const std::string probe = (fs::path(dir) / ".detrain_write_probe").string();
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    int err = errno;
    throw IoError("directory " + dir + " is not writable: " + describe_errno(err) +
                  " (choose another train.project or fix its permissions)");
  }
  ::close(fd);
  std::remove(probe.c_str());
}

}  // namespace detrain
