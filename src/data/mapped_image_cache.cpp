// The machine-wide decoded image store; see mapped_image_cache.h. File layout:
//   page 0: Header (magic, key, slot count, capacity, the bump pointer of the data region and
//           the count and bytes of ready slots); then one Slot per record; then, page aligned,
//           the data region. Slots go empty -> claimed -> ready (or declined); the pixel offset
//           comes from the shared bump pointer when a slot is claimed.
// Processes coordinate with open-file-description locks over the whole file (fcntl F_OFD_*:
// per open like flock, but a failed upgrade keeps the lock held, and a change of type is
// atomic): every user holds a read lock while it has the file open; only a process that gets
// the write lock (so no one else has it open) may create, rebuild or remove the file, and it
// resets claims that a killed process left behind.
#include "data/mapped_image_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/hash64.h"
#include "data/decode.h"

namespace detrain::data {

namespace {

constexpr char kMagic[8] = {'D', 'T', 'I', 'M', 'G', 'C', '0', '1'};
constexpr size_t kPage = 4096;
constexpr uint32_t kEmpty = 0, kClaimed = 1, kReady = 2, kDeclined = 3;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw IoError("image cache '" + path + "': " + what + ": " + describe_errno(errno));
}

// Sets the whole-file lock to F_RDLCK / F_WRLCK; `wait` blocks until it can.
bool lock(int fd, short type, bool wait) {
  struct flock l {};
  l.l_type = type;
  l.l_whence = SEEK_SET;
  while (true) {
    if (::fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &l) == 0) return true;
    if (errno != EINTR) return false;
  }
}

// All of `n` bytes at `offset`, through short writes and signals; false with errno set.
bool write_all(int fd, const unsigned char* data, size_t n, uint64_t offset) {
  while (n > 0) {
    const ssize_t done = ::pwrite(fd, data, n, static_cast<off_t>(offset));
    if (done < 0 && errno == EINTR) continue;
    if (done <= 0) {
      if (done == 0) errno = EIO;
      return false;
    }
    data += done;
    offset += static_cast<uint64_t>(done);
    n -= static_cast<size_t>(done);
  }
  return true;
}

}  // namespace

struct MappedImageCache::Header {
  char magic[8];
  uint64_t key;
  uint64_t records;
  uint64_t capacity;
  uint64_t data_offset;
  uint64_t used;         // bump pointer into the data region (atomic)
  uint64_t ready;        // ready slots (atomic)
  uint64_t ready_bytes;  // their pixel bytes (atomic)
};

struct MappedImageCache::Slot {
  uint64_t offset;
  uint32_t rows, cols;
  uint32_t state;  // kEmpty / kClaimed / kReady / kDeclined (atomic)
  uint32_t unused;
};

MappedImageCache::MappedImageCache(const MappedCacheOptions& options, size_t records)
    : options_(options), records_(records) {
  const std::string& path = options_.path;
  table_size_ = round_up(sizeof(Header) + sizeof(Slot) * records_, kPage);
  pixels_size_ = round_up(std::max<uint64_t>(options_.capacity_bytes, 1), kPage);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(path, "cannot open");
  struct Closer {  // closes the file if the constructor throws past this point
    MappedImageCache* self;
    bool armed = true;
    ~Closer() {
      if (armed) ::close(self->fd_);
    }
  } closer{this};

  Header want{};
  std::memcpy(want.magic, kMagic, sizeof(kMagic));
  want.key = options_.key;
  want.records = records_;
  want.capacity = pixels_size_;
  want.data_offset = table_size_;
  // The capacity is the creator's: a later user (another rank, a later run) adopts it.
  const auto matches = [&](const Header& h) {
    return std::memcmp(h.magic, kMagic, sizeof(kMagic)) == 0 && h.key == want.key &&
           h.records == want.records && h.data_offset == want.data_offset &&
           h.capacity % kPage == 0 && h.capacity > 0;
  };
  const auto read_header = [&](Header* h) {
    struct stat st {};
    return ::fstat(fd_, &st) == 0 &&
           ::pread(fd_, h, sizeof(Header), 0) == static_cast<ssize_t>(sizeof(Header)) &&
           static_cast<uint64_t>(st.st_size) == table_size_ + h->capacity;
  };

  Header found{};
  const auto map_table = [&] {
    table_ = ::mmap(nullptr, table_size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (table_ == MAP_FAILED) {
      table_ = nullptr;
      fail(path, "cannot map its slot table");
    }
  };
  if (lock(fd_, F_WRLCK, false)) {
    // Alone with the file: reuse it if it is ours, else start it afresh.
    reused_ = read_header(&found) && matches(found);
    if (reused_) {
      pixels_size_ = found.capacity;
    } else if (::ftruncate(fd_, 0) != 0 ||
               ::ftruncate(fd_, static_cast<off_t>(table_size_ + pixels_size_)) != 0 ||
               !write_all(fd_, reinterpret_cast<const unsigned char*>(&want), sizeof(want), 0)) {
      fail(path, "cannot size the file");
    }
    map_table();
    if (reused_) {  // claims that never finished belong to a process that was killed
      for (size_t i = 0; i < records_; ++i) {
        Slot* s = slot(static_cast<int64_t>(i));
        if (s->state == kClaimed) s->state = kEmpty;
      }
    }
    if (!lock(fd_, F_RDLCK, true)) fail(path, "cannot lock");
  } else {
    // Others have it open: wait for its creator to finish, then it must be ours.
    if (!lock(fd_, F_RDLCK, true)) fail(path, "cannot lock");
    if (!read_header(&found) || !matches(found)) {
      errno = EBUSY;
      fail(path, "in use by another run with other images or settings");
    }
    pixels_size_ = found.capacity;
    reused_ = true;
    map_table();
  }
  void* pixels =
      ::mmap(nullptr, pixels_size_, PROT_READ, MAP_SHARED, fd_, static_cast<off_t>(table_size_));
  if (pixels == MAP_FAILED) {
    ::munmap(table_, table_size_);
    table_ = nullptr;
    fail(path, "cannot map its images");
  }
  pixels_ = static_cast<const unsigned char*>(pixels);
  closer.armed = false;
}

MappedImageCache::~MappedImageCache() {
  if (pixels_) ::munmap(const_cast<unsigned char*>(pixels_), pixels_size_);
  if (table_) ::munmap(table_, table_size_);
  if (options_.remove_when_done && lock(fd_, F_WRLCK, false))
    ::unlink(options_.path.c_str());  // the last user: no one else holds a read lock
  ::close(fd_);
}

MappedImageCache::Header* MappedImageCache::header() const { return static_cast<Header*>(table_); }

MappedImageCache::Slot* MappedImageCache::slot(int64_t index) const {
  return reinterpret_cast<Slot*>(static_cast<char*>(table_) + sizeof(Header)) + index;
}

cv::Mat MappedImageCache::get(int64_t index) {
  if (index < 0 || static_cast<size_t>(index) >= records_) return {};
  const Slot* s = slot(index);
  if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != kReady) return {};
  // Read-only pixels: cv::Mat wants a non-const pointer, the mapping refuses writes.
  return cv::Mat(static_cast<int>(s->rows), static_cast<int>(s->cols), CV_8UC3,
                 const_cast<unsigned char*>(pixels_ + s->offset));
}

void MappedImageCache::put(int64_t index, const cv::Mat& image) {
  if (index < 0 || static_cast<size_t>(index) >= records_ || image.empty() ||
      image.type() != CV_8UC3)
    return;
  Slot* s = slot(index);
  uint32_t empty = kEmpty;
  if (!__atomic_compare_exchange_n(&s->state, &empty, kClaimed, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return;  // ready, declined, or another thread or process is writing it
  const size_t row = static_cast<size_t>(image.cols) * 3;
  const size_t n = row * static_cast<size_t>(image.rows);
  const uint64_t offset = __atomic_fetch_add(&header()->used, round_up(n, 64), __ATOMIC_ACQ_REL);
  if (offset + n > pixels_size_) {
    decline(s, "");
    return;
  }
  const uint64_t at = table_size_ + offset;
  bool ok = true;
  if (image.isContinuous()) {
    ok = write_all(fd_, image.data, n, at);
  } else {
    for (int y = 0; y < image.rows && ok; ++y)
      ok = write_all(fd_, image.ptr<unsigned char>(y), row, at + row * static_cast<size_t>(y));
  }
  if (!ok) {
    decline(s, describe_errno(errno));
    return;
  }
  s->offset = offset;
  s->rows = static_cast<uint32_t>(image.rows);
  s->cols = static_cast<uint32_t>(image.cols);
  __atomic_store_n(&s->state, kReady, __ATOMIC_RELEASE);
  __atomic_fetch_add(&header()->ready, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&header()->ready_bytes, n, __ATOMIC_RELAXED);
}

void MappedImageCache::decline(Slot* s, const std::string& why) {
  __atomic_store_n(&s->state, kDeclined, __ATOMIC_RELEASE);
  ++declined_;
  if (why.empty()) return;
  std::lock_guard<std::mutex> lock(error_mutex_);
  if (write_error_.empty()) write_error_ = why;
}

size_t MappedImageCache::size() const {
  return static_cast<size_t>(__atomic_load_n(&header()->ready, __ATOMIC_RELAXED));
}

size_t MappedImageCache::bytes() const {
  return static_cast<size_t>(__atomic_load_n(&header()->ready_bytes, __ATOMIC_RELAXED));
}

std::string MappedImageCache::write_error() const {
  std::lock_guard<std::mutex> lock(error_mutex_);
  return write_error_;
}

uint64_t cache_key(const std::vector<ImageRecord>& records, const std::string& annotations,
                   int imgsz, bool exact) {
  Hash64 h(0x1a6e5);
  const auto add_file = [&h](const std::string& path) {
    struct stat st {};
    const bool there = ::stat(path.c_str(), &st) == 0;
    const int64_t facts[3] = {there ? static_cast<int64_t>(st.st_size) : -1,
                              there ? static_cast<int64_t>(st.st_mtim.tv_sec) : 0,
                              there ? static_cast<int64_t>(st.st_mtim.tv_nsec) : 0};
    h.update(path.data(), path.size() + 1);  // with its NUL: no two lists hash alike
    h.update(facts, sizeof(facts));
  };
  // 2, not 1, for val: caches of the INTER_AREA val images of earlier versions are stale.
  const int32_t settings[2] = {imgsz, exact ? 2 : 0};
  h.update(settings, sizeof(settings));
  add_file(annotations);
  for (const auto& r : records) {
    add_file(r.file);
    const int32_t size[2] = {r.width, r.height};
    h.update(size, sizeof(size));
  }
  return h.digest();
}

uint64_t decoded_bytes(const std::vector<ImageRecord>& records, int imgsz) {
  uint64_t total = 0;
  for (const auto& r : records) total += resized_size(r.width, r.height, imgsz).area() * 3ull;
  return total;
}

}  // namespace detrain::data
