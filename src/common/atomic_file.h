// Atomic file writes: data goes to a temporary file in the target's directory, is flushed and
// fsync'ed, then renamed over the target (and the directory fsync'ed). A reader therefore sees
// the old file or the new one, never a torn one; a full disk leaves the old file untouched.
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
// (checkpoints) that should not be built in memory first.
void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& writer);

// Reads a whole file; throws IoError naming the path when it cannot.
std::string read_file(const std::string& path);

// Creates a directory and its parents; throws IoError when it cannot, or when it exists but is
// not writable (checked by creating and removing a probe file).
void ensure_writable_dir(const std::string& dir);

}  // namespace detrain
