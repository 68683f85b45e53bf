// Image cache; see image_cache.h. LRU (not the reference's FIFO), shared by all workers and
// guarded by one mutex: lookups are rare next to the decode they save.
#include "data/image_cache.h"

#include <fstream>
#include <string>

namespace detrain::data {

cv::Mat ImageCache::get(int64_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = entries_.find(index);
  if (it == entries_.end()) return {};
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.image;
}

void ImageCache::put(int64_t index, const cv::Mat& image) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (entries_.count(index)) return;
  lru_.push_front(index);
  entries_.emplace(index, Entry{image, lru_.begin()});
  bytes_ += image.total() * image.elemSize();
  while (capacity_ > 0 && entries_.size() > capacity_) {
    const int64_t oldest = lru_.back();
    lru_.pop_back();
    const auto it = entries_.find(oldest);
    bytes_ -= it->second.image.total() * it->second.image.elemSize();
    entries_.erase(it);
  }
}

size_t ImageCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

size_t ImageCache::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

uint64_t available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (meminfo >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

}  // namespace detrain::data
