// Decoded, resized images shared by all loader threads. DecodedImageStore is what the image
// source reads and fills; ImageCache is the in-process store: a bounded LRU that holds the
// recent images mosaic partners are drawn from (the reference's per-worker FIFO buffer, shared
// here so workers reuse each other's decodes), or an unbounded one. The machine-wide store of
// data.cache=ram|disk is data/mapped_image_cache.h. Contents never change results, only the
// work done.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <opencv2/core.hpp>
#include <unordered_map>

namespace detrain::data {

class DecodedImageStore {
 public:
  virtual ~DecodedImageStore() = default;
  // The image of record `index`, or an empty Mat when it is not held. Thread-safe. The pixels
  // are shared: a caller that edits them in place clones first.
  virtual cv::Mat get(int64_t index) = 0;
  // Offers a decoded image (the store may decline it). Thread-safe.
  virtual void put(int64_t index, const cv::Mat& image) = 0;
  virtual size_t size() const = 0;   // images held
  virtual size_t bytes() const = 0;  // their pixel bytes
};

class ImageCache : public DecodedImageStore {
 public:
  // capacity: images kept (0: unlimited).
  explicit ImageCache(size_t capacity) : capacity_(capacity) {}

  cv::Mat get(int64_t index) override;
  // Stores an image (evicting the least recently used beyond capacity).
  void put(int64_t index, const cv::Mat& image) override;

  size_t size() const override;
  size_t bytes() const override;
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
