// One copy of a split's decoded, resized images per machine (data.cache=ram) or on disk across
// runs (data.cache=disk): a file of slots, one per record, that every loader thread and every
// rank of the machine opens. The first to decode an image claims its slot and writes the pixels
// with pwrite; everyone reads them through a read-only shared mapping (no copy, and a stray
// in-place edit faults instead of corrupting the cache). ram files live in /dev/shm and the
// last user removes them; disk files stay beside the data set (data/cache_files.h) and are
// reused while their key (records, image files, imgsz, resize mode) is unchanged.
//
// Failure is never fatal: an image that does not fit the capacity, or whose write fails (a full
// disk), is simply not cached and the store says so once.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "data/coco_records.h"
#include "data/image_cache.h"

namespace detrain::data {

struct MappedCacheOptions {
  std::string path;               // the cache file
  uint64_t key = 0;               // what it holds (cache_key); a file of another key is rebuilt
  uint64_t capacity_bytes = 0;    // pixel bytes it may hold (when it creates the file)
  bool remove_when_done = false;  // ram: the last user removes the file
};

class MappedImageCache : public DecodedImageStore {
 public:
  // Opens `options.path` for `records` slots, creating or rebuilding it when it is absent,
  // damaged or of another key and no other process uses it. Throws IoError naming the path when
  // the file cannot be opened or mapped, or is in use by a process with another key.
  MappedImageCache(const MappedCacheOptions& options, size_t records);
  ~MappedImageCache() override;
  MappedImageCache(const MappedImageCache&) = delete;
  MappedImageCache& operator=(const MappedImageCache&) = delete;

  cv::Mat get(int64_t index) override;
  void put(int64_t index, const cv::Mat& image) override;
  size_t size() const override;
  size_t bytes() const override;

  bool reused() const { return reused_; }               // the file was already there with this key
  size_t declined() const { return declined_.load(); }  // images not cached (full, write error)
  std::string write_error() const;                      // the first write error, if any
  const std::string& path() const { return options_.path; }
  uint64_t capacity() const { return pixels_size_; }

 private:
  struct Header;
  struct Slot;
  Header* header() const;
  Slot* slot(int64_t index) const;
  void decline(Slot* s, const std::string& why);

  MappedCacheOptions options_;
  size_t records_ = 0;
  int fd_ = -1;
  void* table_ = nullptr;  // header + slots, read-write
  size_t table_size_ = 0;
  const unsigned char* pixels_ = nullptr;  // the data region, read-only
  size_t pixels_size_ = 0;
  bool reused_ = false;
  std::atomic<size_t> declined_{0};
  mutable std::mutex error_mutex_;
  std::string write_error_;
};

// The key of a split's decoded images: each record's file (path, size, modification time) and
// size in the annotations, the annotation file's size and time, imgsz and the resize mode.
uint64_t cache_key(const std::vector<ImageRecord>& records, const std::string& annotations,
                   int imgsz, bool exact);

// Pixel bytes of every record resized to imgsz (long side).
uint64_t decoded_bytes(const std::vector<ImageRecord>& records, int imgsz);

}  // namespace detrain::data
