// Decoded, resized images shared by all loader threads: a bounded LRU that holds the recent
// images mosaic partners are drawn from (the reference's per-worker FIFO buffer, shared here so
// workers reuse each other's decodes), or, with data.cache=ram, every image of the split after
// a check against available memory. Contents never change results, only the work done.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <opencv2/core.hpp>
#include <unordered_map>

namespace detrain::data {

class ImageCache {
 public:
  // capacity: images kept (0: unlimited, the RAM cache).
  explicit ImageCache(size_t capacity) : capacity_(capacity) {}

  // The image of record `index`, or an empty Mat when it is not cached. Thread-safe.
  cv::Mat get(int64_t index);
  // Stores an image (evicting the least recently used beyond capacity). Thread-safe.
  void put(int64_t index, const cv::Mat& image);

  size_t size() const;
  size_t bytes() const;
  size_t capacity() const { return capacity_; }

 private:
  struct Entry {
    cv::Mat image;
    std::list<int64_t>::iterator lru;
  };
  size_t capacity_;
  mutable std::mutex mutex_;
  std::list<int64_t> lru_;  // front: most recent
  std::unordered_map<int64_t, Entry> entries_;
  size_t bytes_ = 0;
};

// Bytes of memory the system can still give (MemAvailable), 0 when unknown.
uint64_t available_memory_bytes();

}  // namespace detrain::data
