// Store selection; see image_store.h.
#include "data/image_store.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "common/errors.h"
#include "common/strings.h"
#include "data/cache_files.h"
#include "data/mapped_image_cache.h"

namespace detrain::data {

namespace {

constexpr double kRamMargin = 1.5;                    // the reference's 50 % headroom
constexpr uint64_t kDiskReserve = uint64_t(1) << 30;  // left free on the cache's disk
constexpr const char* kSharedMemory = "/dev/shm";

uint64_t free_bytes(const std::string& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

// Bytes a file occupies (sparse files: only what was written).
uint64_t allocated_bytes(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_blocks) * 512 : 0;
}

std::string size_text(uint64_t bytes) { return human_bytes(static_cast<double>(bytes)); }

ImageStore recent_only(const ImageStoreRequest& r) {
  ImageStore s;
  if (r.train) s.store = std::make_unique<ImageCache>(r.recent);
  return s;
}

// The mapped store at `path` with up to `budget` bytes, or what `none` gives (warned) when
// hardly anything fits or the file cannot be opened.
ImageStore mapped(const ImageStoreRequest& r, const std::vector<ImageRecord>& records,
                  const std::string& path, uint64_t key, uint64_t budget, bool remove_when_done) {
  // Each image takes its bytes rounded up to 64 in the file.
  const uint64_t need = decoded_bytes(records, r.imgsz) + 64 * records.size();
  MappedCacheOptions o;
  o.path = path;
  o.key = key;
  o.capacity_bytes = std::min(need, budget);
  o.remove_when_done = remove_when_done;
  if (o.capacity_bytes < need / 100) {
    spdlog::warn("data.cache={}: {} would need {} but only {} are free there; not caching", r.cache,
                 path, size_text(need), size_text(budget));
    return recent_only(r);
  }
  std::unique_ptr<MappedImageCache> cache;
  try {
    cache = std::make_unique<MappedImageCache>(o, records.size());
  } catch (const IoError& e) {
    spdlog::warn("data.cache={}: {}; decoding without it", r.cache, e.what());
    return recent_only(r);
  }
  ImageStore s;
  const bool holds_all = cache->capacity() >= need;
  s.summary =
      fmt::format("data.cache={}: {} {}: room for {} of {} ({} of {} images decoded so far){}{}",
                  r.cache, cache->reused() ? "using" : "created", path,
                  size_text(cache->capacity()), size_text(need), cache->size(), records.size(),
                  holds_all ? "" : "; the rest does not fit and is decoded each time",
                  remove_when_done ? "; one copy for every rank and worker on this machine" : "");
  s.store = std::move(cache);
  return s;
}

}  // namespace

ImageStore open_image_store(const ImageStoreRequest& r, const std::vector<ImageRecord>& records) {
  if (r.cache == "none") return recent_only(r);
  const uint64_t key = cache_key(records, r.annotations, r.imgsz, !r.train);
  if (r.cache == "disk") {
    const std::string path =
        cache_file_for(r.annotations, fmt::format("images-{}{}", r.imgsz, r.train ? "" : "-val"));
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    // What a file already there holds counts as room (it is reused or rebuilt in place).
    const uint64_t room =
        free_bytes(std::filesystem::path(path).parent_path().string()) + allocated_bytes(path);
    return mapped(r, records, path, key, room > kDiskReserve ? room - kDiskReserve : 0, false);
  }
  // ram
  const uint64_t memory = static_cast<uint64_t>(available_memory_bytes() / kRamMargin);
  if (::access(kSharedMemory, W_OK) == 0) {
    const std::string path = fmt::format("{}/detrain-{:016x}.images", kSharedMemory, key);
    // Pages another rank already wrote are counted out of MemAvailable: count them back.
    const uint64_t existing = allocated_bytes(path);
    const uint64_t budget = std::min(memory + existing, free_bytes(kSharedMemory) + existing);
    return mapped(r, records, path, key, budget, true);
  }
  const uint64_t need = decoded_bytes(records, r.imgsz);
  if (memory > 0 && need > memory) {
    spdlog::warn("data.cache=ram needs ~{} (+50 % margin) but {} are available; not caching",
                 size_text(need), size_text(static_cast<uint64_t>(memory * kRamMargin)));
    return recent_only(r);
  }
  ImageStore s;
  s.store = std::make_unique<ImageCache>(0);
  s.summary = fmt::format("data.cache=ram: {} decoded images in this process (~{}; no /dev/shm)",
                          records.size(), size_text(need));
  return s;
}

}  // namespace detrain::data
