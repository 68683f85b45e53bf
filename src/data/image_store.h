// Which decoded-image store a loader gets for data.cache:
//   none: training keeps the recent images mosaic partners come from (an in-process LRU);
//         validation keeps nothing.
//   ram:  every image once per machine in /dev/shm (MappedImageCache), shared by all workers
//         and all ranks of a --nproc run and removed by the last; capacity from the memory the
//         system can give (MemAvailable with the reference's 50 % margin) and the room in
//         /dev/shm: what does not fit is decoded each time, and the log says so. Without a
//         usable /dev/shm: one in-process copy after the same check.
//   disk: the same file beside the data set (data/cache_files.h), kept across runs and rebuilt
//         when the records, an image file, imgsz or the resize mode change; capacity from the
//         free space there (1 GiB kept free).
// A store that cannot be opened is never fatal: the loader falls back to what `none` does.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/coco_records.h"
#include "data/dataset.h"
#include "data/image_cache.h"

namespace detrain::data {

struct ImageStoreRequest {
  std::string cache = "none";  // data.cache
  std::string annotations;     // the split's annotation file (names and keys the store)
  bool train = true;           // train (DCT-reduced decodes allowed) or val (full-size decodes)
  int imgsz = 640;
  size_t recent = 0;  // LRU size for training without a full store
};

struct ImageStore {
  std::unique_ptr<DecodedImageStore> store;  // null: validation without a cache
  std::string summary;                       // one line for the log (empty for none)
};

ImageStore open_image_store(const ImageStoreRequest& request,
                            const std::vector<ImageRecord>& records);

}  // namespace detrain::data
