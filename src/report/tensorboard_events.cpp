// See tensorboard_events.h. The CRC is the bytewise table method: event files are small enough
// (a few hundred bytes per row, an image per plot) that the hardware instruction is not worth
// a CPU check.
#include "report/tensorboard_events.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>

#include "report/tensorboard_summaries.h"

namespace detrain::report {
namespace fs = std::filesystem;

namespace {

constexpr std::array<uint32_t, 256> crc32c_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrc32cTable = crc32c_table();

constexpr const char* kPrefix = "events.out.tfevents.";

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// The <secs> of the newest event file in `dir` (0 when there is none).
int64_t newest_event_secs(const std::string& dir) {
  int64_t newest = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kPrefix, 0) != 0) continue;
    const char* digits = name.c_str() + std::strlen(kPrefix);
    char* end = nullptr;
    const long long secs = std::strtoll(digits, &end, 10);
    if (end != digits && *end == '.') newest = std::max<int64_t>(newest, secs);
  }
  return newest;
}

std::string host_name() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return "localhost";
  return buf;
}

}  // namespace

uint32_t crc32c(std::string_view bytes) {
  uint32_t c = 0xffffffffu;
  for (unsigned char b : bytes) c = kCrc32cTable[(c ^ b) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

uint32_t masked_crc32c(std::string_view bytes) {
  const uint32_t c = crc32c(bytes);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string tfrecord(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  put_le(out, data.size(), 8);
  put_le(out, masked_crc32c(std::string_view(out.data(), 8)), 4);
  out.append(data);
  put_le(out, masked_crc32c(data), 4);
  return out;
}

double wall_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

EventFile::EventFile(const std::string& dir) {
  const double now = wall_time_now();
  const int64_t secs = std::max(static_cast<int64_t>(now), newest_event_secs(dir) + 1);
  const std::string stem = (fs::path(dir) / kPrefix).string() + std::to_string(secs) + "." +
                           host_name() + "." + std::to_string(::getpid()) + ".";
  for (int n = 0; !file_; ++n) {
    const std::string path = stem + std::to_string(n);
    if (fs::exists(path)) continue;  // an event file is never reopened
    file_ = std::make_unique<AppendLog>(path, true);
  }
  write({file_version_event(now)});
}

void EventFile::write(const std::vector<std::string>& events) {
  std::string records;
  for (const auto& e : events) records += tfrecord(e);
  file_->append(records);
}

}  // namespace detrain::report
