// A binary copy of a parsed annotation file, so a second run skips the JSON parse (the
// reference's labels.cache, for COCO files). The cache is keyed by the annotation file's size,
// modification time and a hash of its bytes (all of a small file; of a large one its first and
// last MiB and 62 samples of 64 KiB between), and by the ReadOptions it was read with; any
// difference, a truncated or corrupt cache, or a newer format makes it stale, and the file is
// parsed again and the cache rewritten (atomically: a kill or a full disk leaves the old one or
// none). The cache never changes what a consumer sees: the table read from it equals the
// parsed one field for field (tests/coco/test_table_cache.cpp). Where the cache lives is the
// caller's choice (data/cache_files.h).
#pragma once

#include <string>

#include "coco/annotations.h"
#include "coco/annotations_json.h"

namespace detrain::coco {

struct TableCacheUse {
  bool hit = false;      // the table came from the cache file
  bool written = false;  // the cache file was (re)written
  std::string miss;      // why it was not used: "absent", "stale", "corrupt: ..." (empty on a hit)
  std::string write_error;  // why it could not be written (the run goes on without it)
};

// The table of `path` read with `options`, from `cache_file` when that matches the file, else
// parsed (load_annotations) and cached there. Errors of the annotation file are thrown as
// load_annotations throws them; the cache's own problems are only reported in `use`.
AnnotationTable load_annotations_cached(const std::string& path, const ReadOptions& options,
                                        const std::string& cache_file,
                                        TableCacheUse* use = nullptr);

// The cache format (exposed for tests): the key and the table as bytes, and back. decode
// returns false (and says why) on anything but an intact cache of exactly `key`.
struct TableCacheKey {
  uint64_t file_size = 0;
  int64_t file_mtime_ns = 0;
  uint64_t file_hash = 0;
  std::string read_options;  // describe(options)
};
std::string describe(const ReadOptions& options);
std::string encode_table_cache(const TableCacheKey& key, const AnnotationTable& table);
bool decode_table_cache(const char* bytes, size_t size, const TableCacheKey& key,
                        AnnotationTable* table, std::string* why);

}  // namespace detrain::coco
