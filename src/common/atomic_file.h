// Atomic file writes: data goes to a temporary file `<target>.tmp.<pid>.<n>` in the target's
// directory, is fsync'ed, then renamed over the target (and the directory fsync'ed). A reader
// therefore sees the old file or the new one, never a torn one; a full disk or any failure of
// the writer removes the temporary file and leaves the old file untouched.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

namespace detrain {

// Writes `bytes` to `path` atomically. Throws IoError naming the path on any failure
// (including ENOSPC: "disk full"); the temporary file is removed on failure.
void write_file_atomic(const std::string& path, std::string_view bytes);

// Streams into a temporary file through `writer`, then commits as above. Use for large outputs
// (checkpoints) that should not be built in memory first. After a failed write(2) the stream
// discards the rest instead of failing (so LibTorch's zip writer cannot abort the process), and
// the failure is thrown as IoError when the writer returns. What the writer throws itself
// passes through, after the temporary file is removed.
void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& writer);

// A log file that only grows: each append() lands whole or not at all (a short write, such as
// on a full disk, is cut back to where the append started), so a crash can only lose or cut the
// record being written, and readers drop a cut last record. The file is never rewritten.
class AppendLog {
 public:
  // Opens `path` for appending, creating it; `exclusive`: it must not exist yet. IoError naming
  // the path when it cannot be opened.
  explicit AppendLog(const std::string& path, bool exclusive = false);
  ~AppendLog();
  AppendLog(const AppendLog&) = delete;
  AppendLog& operator=(const AppendLog&) = delete;

  // IoError naming the path when the bytes cannot be written; what was appended before stays.
  void append(std::string_view bytes);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// Removes temporaries `<prefix>*.tmp.<pid>.<n>` in `dir` left by processes that no longer run
// (a kill during a write). An empty prefix matches every file name. Returns how many it removed.
int remove_stale_temporaries(const std::string& dir, const std::string& prefix = "");

// "disk full (free some space and retry)" for ENOSPC/EDQUOT/EFBIG, else strerror.
std::string describe_errno(int err);

// Reads a whole file; throws IoError naming the path when it cannot.
std::string read_file(const std::string& path);

// Creates a directory and its parents; throws IoError when it cannot, or when it exists but is
// not writable (checked by creating and removing a probe file).
void ensure_writable_dir(const std::string& dir);

}  // namespace detrain
