// Atomic writes via temp file + fsync + rename; see atomic_file.h.
#include "common/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <random>
#include <sstream>
#include <streambuf>

#include "common/errors.h"

namespace detrain {
namespace fs = std::filesystem;

namespace {

constexpr const char* kTempMarker = ".tmp.";

std::string temp_name_for(const std::string& path) {
  std::random_device rd;
  return path + kTempMarker + std::to_string(::getpid()) + "." + std::to_string(rd() % 1000000);
}

// The pid of "<name>.tmp.<pid>.<n>", or -1 when `name` is not such a temporary.
long temp_owner(const std::string& name) {
  const size_t at = name.rfind(kTempMarker);
  if (at == std::string::npos) return -1;
  const std::string tail = name.substr(at + std::strlen(kTempMarker));  // "<pid>.<n>"
  const size_t dot = tail.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == tail.size()) return -1;
  for (size_t i = 0; i < tail.size(); ++i)
    if (i != dot && (tail[i] < '0' || tail[i] > '9')) return -1;
  return std::stol(tail.substr(0, dot));
}

bool process_gone(long pid) { return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

// An output buffer over a file descriptor that records the errno of the first failed write(2)
// and from then on discards the output while reporting success: LibTorch's zip writer must not
// see a failing stream, because its destructor then writes the end of the archive, throws again
// during unwinding and aborts the process. write_file_atomic reports the recorded error once
// the writer returns.
class FdBuf : public std::streambuf {
 public:
  explicit FdBuf(int fd) : fd_(fd) { setp(buffer_, buffer_ + sizeof buffer_); }
  int error() const { return error_; }
  bool flush_all() { return drain() && error_ == 0; }

 protected:
  int_type overflow(int_type ch) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (n >= static_cast<std::streamsize>(sizeof buffer_)) {  // large blocks bypass the buffer
      if (!drain() || !write_all(s, static_cast<size_t>(n))) return 0;
      return n;
    }
    return std::streambuf::xsputn(s, n);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const size_t n = static_cast<size_t>(pptr() - pbase());
    const bool ok = write_all(pbase(), n);
    setp(buffer_, buffer_ + sizeof buffer_);
    return ok;
  }
  bool write_all(const char* p, size_t n) {
    if (error_) return true;  // already failed: discard (see above)
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        error_ = w < 0 ? errno : ENOSPC;  // write(2) returning 0 on a regular file: no space
        return true;
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }
  int fd_;
  int error_ = 0;
  char buffer_[1 << 16];
};

void fsync_dir(const std::string& path) {
  auto parent = fs::path(path).parent_path();
  int fd = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;  // best effort on file systems that refuse to open directories
  ::fsync(fd);
  ::close(fd);
}

// Renames a finished temporary over `path` (removing it when that fails).
void commit(const std::string& tmp, const std::string& path) {
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    throw IoError("cannot move " + tmp + " to " + path + ": " + describe_errno(err));
  }
  fsync_dir(path);
}

[[noreturn]] void write_failed(const std::string& path, const std::string& tmp, int fd, int err) {
  if (fd >= 0) ::close(fd);
  std::remove(tmp.c_str());
  throw IoError("cannot write " + path + ": " + describe_errno(err ? err : EIO) +
                "; the previous file, if any, is unchanged");
}

}  // namespace

std::string describe_errno(int err) {
  if (err == ENOSPC || err == EDQUOT || err == EFBIG)
    return "disk full (free some space and retry)";
  return std::strerror(err);
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  write_file_atomic(path, [&](std::ostream& out) { out.write(bytes.data(), bytes.size()); });
}

void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& writer) {
  const fs::path target(path);
  remove_stale_temporaries(target.has_parent_path() ? target.parent_path().string() : ".",
                           target.filename().string());
  const std::string tmp = temp_name_for(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    int err = errno;
    throw IoError("cannot write " + path + ": " + describe_errno(err) +
                  " (check that the directory exists and is writable)");
  }
  FdBuf buf(fd);
  std::ostream out(&buf);
  try {
    writer(out);
  } catch (const Error&) {
    ::close(fd);
    std::remove(tmp.c_str());
    throw;
  } catch (const std::exception&) {
    // A failed write surfaces as the writer's own exception; report the write, not the writer.
    if (buf.error()) write_failed(path, tmp, fd, buf.error());
    ::close(fd);
    std::remove(tmp.c_str());
    throw;
  }
  if (!out || !buf.flush_all()) write_failed(path, tmp, fd, buf.error());
  if (::fsync(fd) != 0) write_failed(path, tmp, fd, errno);
  if (::close(fd) != 0) write_failed(path, tmp, -1, errno);
  commit(tmp, path);
}

int remove_stale_temporaries(const std::string& dir, const std::string& prefix) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const long pid = temp_owner(name);
    if (pid <= 0 || pid == ::getpid() || !process_gone(pid)) continue;
    std::error_code rm;
    if (fs::remove(entry.path(), rm)) ++removed;
  }
  return removed;
}

std::string read_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw IoError("cannot read " + path + ": it is a directory, not a file");
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

AppendLog::AppendLog(const std::string& path, bool exclusive) : path_(path) {
  const int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (exclusive ? O_EXCL : 0);
  fd_ = ::open(path.c_str(), flags, 0644);
  if (fd_ < 0) throw IoError("cannot open " + path + " for appending: " + std::strerror(errno));
}

AppendLog::~AppendLog() {
  if (fd_ >= 0) ::close(fd_);
}

void AppendLog::append(std::string_view bytes) {
  const off_t start = ::lseek(fd_, 0, SEEK_END);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      if (start >= 0 && ::ftruncate(fd_, start) != 0) {
        // Nothing more to undo; readers ignore an incomplete last record.
      }
      throw IoError("cannot append to " + path_ + ": " + describe_errno(err) +
                    "; what was written before is kept");
    }
    done += static_cast<size_t>(n);
  }
}

}  // namespace detrain
