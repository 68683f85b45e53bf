// TensorBoard event files: events.out.tfevents.<secs>.<host>.<pid>.<n>, a sequence of TFRecords
// (little-endian uint64 length, masked CRC32C of those 8 bytes, the Event bytes, masked CRC32C
// of them), the first holding the file version (tensorboard_summaries.h). A file is a log that
// only grows (common/atomic_file.h's AppendLog); a new process opens a new file, never an
// existing one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/atomic_file.h"

namespace detrain::report {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as TFRecord uses it.
uint32_t crc32c(std::string_view bytes);
// TFRecord's masked form: rotated right by 15 bits plus 0xa282ead8.
uint32_t masked_crc32c(std::string_view bytes);

// One TFRecord around `data`.
std::string tfrecord(std::string_view data);

// Seconds since the epoch, as Event.wall_time holds them.
double wall_time_now();

class EventFile {
 public:
  // Creates a new event file in `dir` and writes the file-version event. Readers read a run's
  // files in name order, so <secs> is now, or one past the newest event file already in `dir`
  // when that is not earlier (a resume within the same second); <n> makes the name unique.
  // IoError naming the file when it cannot be created.
  explicit EventFile(const std::string& dir);

  // Appends Event messages as TFRecords in one write: all of them land or none.
  void write(const std::vector<std::string>& events);
  const std::string& path() const { return file_->path(); }

 private:
  std::unique_ptr<AppendLog> file_;
};

}  // namespace detrain::report
